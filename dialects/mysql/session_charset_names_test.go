// Guarded table names at MariaDB's limits and the schema tool's session character
// set (red-team rt56a F4).

package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func charsetName(rng *rand.Rand, prefix string, chars int) string {
	pieces := []string{"a", "B", "z", "_", "$", "é", "É", "ß", "中", "日", "Ω"}
	r := []rune(prefix)
	for len(r) < chars {
		r = append(r, []rune(pieces[rng.Intn(len(pieces))])...)
	}
	return string(r[:chars])
}

func charsetQ(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func charsetURL(names []string) string {
	var out []string
	for _, n := range names {
		out = append(out, strings.NewReplacer("%", "%25", "$", "%24", "&", "%26").Replace(n))
	}
	return strings.Join(out, ",")
}

func charsetAllOK(reps []schema.TableReport) bool {
	for _, r := range reps {
		if !r.OK() {
			return false
		}
	}
	return len(reps) > 0
}

// TestMariaDBRegisterFromLatin1Session (red-team rt56a F4): schema.RegisterTables,
// which fencedsql-schema -apply runs before its Check, recorded a non-ASCII name from a
// latin1 or cp1250 session as the server decoded its UTF-8 bytes ("cafÃ©…" for
// "café…"), a name no table has, which every pool then guarded. It now refuses such a
// session with a *SessionError (character_set_client, or character_set_results)
// before anything is written; Check refuses it too.
func TestMariaDBRegisterFromLatin1Session(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn)
	rng := rand.New(rand.NewSource(5605))
	for trial := 0; trial < 3; trial++ {
		name := charsetName(rng, fmt.Sprintf("café%d_", trial), 10+rng.Intn(40))
		testdb.Exec(t, raw, "CREATE TABLE "+charsetQ(name)+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
		for _, cs := range []string{"latin1", "cp1250"} {
			inst := testdb.Open(t, "mysql", fencetest.WithParam(dsn, "charset="+cs))
			defer inst.Close()
			err := schema.RegisterTables(ctx, inst, mysql.Dialect, schema.GuardSpec{Table: name})
			var rows []string
			r, qerr := raw.QueryContext(ctx, "SELECT table_name FROM fencedsql_registry")
			if qerr == nil {
				for r.Next() {
					var s string
					r.Scan(&s)
					rows = append(rows, s)
				}
				r.Close()
			}
			var se *fencedsql.SessionError
			for _, s := range rows {
				if s != name {
					t.Errorf("trial %d: RegisterTables(%q) from a %s session: %v; the registry records %q, a name no table has; want a *SessionError and no row, or the name as given", trial, name, cs, err, s)
				}
			}
			if !errors.As(err, &se) {
				t.Errorf("trial %d: RegisterTables from a %s session: %v; want a *SessionError", trial, cs, err)
			}
			if _, err := schema.Check(ctx, inst, mysql.Dialect, schema.GuardSpec{Table: name}); !errors.As(err, &se) {
				t.Errorf("trial %d: schema.Check from a %s session: %v; want a *SessionError", trial, cs, err)
			}
			raw.ExecContext(ctx, "DELETE FROM fencedsql_registry")
		}
	}
}

// TestMariaDBNamesAndSessionCharsets: a generator of guarded table names at
// MariaDB's limits (up to 64 characters, non-ASCII BMP letters, mixed case, $), two
// tables per trial sharing a long prefix, installed by fencedsql-schema -apply from a
// session whose character set is utf8mb4 or utf8mb3 (the DSN's charset). Oracle:
// -apply either fails with a typed error (a *schema.ConfigError or a session error) and
// leaves no record behind, or every table's stale UPDATE and stale re-INSERT of a key
// deleted under a newer token are refused (pool and plain connection), and the
// recorded tables' Check is OK.
func TestMariaDBNamesAndSessionCharsets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn)
	rng := rand.New(rand.NewSource(5603))
	charsets := []string{"utf8mb3", "utf8mb4"}
	for trial := 0; trial < 3; trial++ {
		cs := charsets[trial%len(charsets)]
		base := charsetName(rng, fmt.Sprintf("rt56a%d_é", trial), 50+rng.Intn(10))
		names := []string{base + "_one", base + "_two"}
		for _, n := range names {
			testdb.Exec(t, raw, "CREATE TABLE "+charsetQ(n)+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
		}
		inst := testdb.Open(t, "mysql", fencetest.WithParam(dsn, "charset="+cs))
		var specs []schema.GuardSpec
		for _, n := range names {
			specs = append(specs, schema.GuardSpec{Table: n})
		}
		reps, err := fencetest.ApplyRounds(ctx, inst, mysql.Dialect, false, specs...)
		inst.Close()
		if err != nil || !charsetAllOK(reps) {
			var ce *schema.ConfigError
			var se *fencedsql.SessionError
			if err == nil || !(errors.As(err, &ce) || errors.As(err, &se)) {
				t.Errorf("trial %d (%s) %q: -apply: %v %q; want OK or a typed refusal", trial, cs, names, err, fencetest.ReportProblems(reps))
			}
			// A refused -apply must leave no record of a table the database does not have.
			var bad []string
			rows, qerr := raw.QueryContext(ctx, "SELECT table_name FROM fencedsql_registry")
			if qerr == nil {
				for rows.Next() {
					var s string
					rows.Scan(&s)
					var n int
					raw.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", s).Scan(&n)
					if n == 0 {
						bad = append(bad, s)
					}
				}
				rows.Close()
			}
			if len(bad) > 0 {
				t.Errorf("trial %d (%s): -apply refused (%v) but left registry rows naming no table: %q", trial, cs, err, bad)
				testdb.Exec(t, raw, "DELETE FROM fencedsql_registry WHERE table_name NOT IN (SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE())")
			}
			if reps, err = fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, specs...); err != nil || !charsetAllOK(reps) {
				t.Fatalf("trial %d: -apply from utf8mb4: %v %q", trial, err, fencetest.ReportProblems(reps))
			}
		}
		list := charsetURL(names)
		pool := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables="+list))
		for i, n := range names {
			q := charsetQ(n)
			id := int64(100*trial + i)
			if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO "+q+" (id, balance) VALUES (?, 1)", id); err != nil {
				t.Errorf("trial %d %q: fresh INSERT: %v", trial, n, err)
				continue
			}
			if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 90), "UPDATE "+q+" SET balance = 2 WHERE id = ?", id); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("trial %d %q: stale UPDATE: %v", trial, n, err)
			}
			if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 200), "DELETE FROM "+q+" WHERE id = ?", id); err != nil {
				t.Errorf("trial %d %q: DELETE: %v", trial, n, err)
				continue
			}
			if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 150), "INSERT INTO "+q+" (id, balance) VALUES (?, 3)", id); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("trial %d %q: stale re-INSERT: %v", trial, n, err)
			}
			raw.ExecContext(ctx, "INSERT INTO "+q+" (id, balance, fence_token, version) VALUES (?, 4, 150, 1)", id)
			var c int
			raw.QueryRowContext(ctx, "SELECT count(*) FROM "+q+" WHERE id = ?", id).Scan(&c)
			if c != 0 {
				t.Errorf("trial %d %q: plain stale re-INSERT accepted", trial, n)
			}
		}
		pool.Close()
		if reps, err := schema.Check(ctx, raw, mysql.Dialect); err != nil || !charsetAllOK(reps) {
			t.Errorf("trial %d (%s): Check of the recorded tables: %v %q", trial, cs, err, fencetest.ReportProblems(reps))
		}
	}
}
