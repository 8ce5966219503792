// The guard text under client encodings: one the library's guard text does not
// survive (red-team rt52a F3), and the guard source read back as ASCII (fe6e201).

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestClientEncodingGuardText (red-team rt52a F3): the guard bodies hold non-ASCII
// characters (… and — in their comments), which the library reads back through the
// session's client encoding and compares with its UTF-8 text: under LATIN1 the read
// failed (22P05), under EUC_JP the query's parameter was invalid (22021), under
// WIN1252 the healthy guard read as changed and schema.Check's Fix, applied there,
// stored mis-decoded text. Now a client encoding other than UTF8 and SQL_ASCII is
// refused with a *SessionError on client_encoding (the pool's guarded writes) and a
// typed error (schema.Check), and no Fix is proposed.
func TestClientEncodingGuardText(t *testing.T) {
	for _, enc := range []string{"LATIN1", "WIN1252", "EUC_JP"} {
		t.Run(enc, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			setup := rawWith(t, dsn,
				"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
				"INSERT INTO acc (id) VALUES (1)")
			checkAcc(t, setup, dsn)
			setup.Close()
			encDSN := dsn + "&client_encoding=" + enc
			db := testdb.Open(t, "fenced-pgx", encDSN+"&fenced_tables=acc")
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET balance = 10 WHERE id = 1")
			var se *fencedsql.SessionError
			if err != nil && !(errors.As(err, &se) && strings.Contains(se.Setting, "client_encoding")) {
				t.Errorf("client_encoding %s (accepted by the session check): a healthy guarded table's write refused: %.400v", enc, err)
			}
			raw := rawWith(t, encDSN)
			reps, cerr := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
			if cerr != nil {
				if !cfgmTyped(cerr) {
					t.Errorf("schema.Check under %s: untyped %.300v", enc, cerr)
				}
				return
			}
			for _, r := range reps {
				if len(r.Fix) == 0 {
					continue
				}
				t.Errorf("schema.Check under %s reports the healthy guard as changed: %.300q", enc, r.Problems)
				// Apply the Fix as an operator would, then a UTF8 pool.
				for _, q := range r.Fix {
					if _, err := raw.ExecContext(ctx, q); err != nil {
						t.Logf("fix under %s: %.200v", enc, err)
						return
					}
				}
				u := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
				if _, err := u.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE acc SET balance = 20 WHERE id = 1"); err != nil {
					t.Errorf("after applying schema.Check's Fix under %s, a UTF8 pool refuses the table: %.300v", enc, err)
				}
			}
		})
	}
}

// TestGuardColumnsRoundTripClientEncodings (generator; red-team rt56d, held): guards
// installed on fencing columns whose names mix backslashes, octal-looking text (\101,
// \\x41, \377), quotes, spaces, $ and non-ASCII (é, ß, 日本, 😀) are read back
// through GuardedTablesQuery — the guard's source as ASCII, bytea's escape format
// (fe6e201) — on sessions whose client_encoding is UTF8, LATIN1, SQL_ASCII, EUC_JP or
// WIN1252. Oracle: GuardColumns (unescapeBytea, then the NULL tests) gives back exactly
// the installed column names of every table, under every encoding.
//
// Knobs (internal/fencetest.ReadScheduleKnobs): the seed is time-based and logged;
// FENCEDSQL_SCHEDULES_ITERS sets the number of tables (default 12, about 1 s).
func TestGuardColumnsRoundTripClientEncodings(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 12)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d go test -run '^TestGuardColumnsRoundTripClientEncodings$' ./dialects/postgres/)", k.Seed, k.Seed)
	rng := rand.New(rand.NewSource(k.Seed))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn)
	pieces := []string{`\`, `\\`, `\101`, `\\x41`, `\x`, `\0`, `\377`, `"`, `'`, "é", "ß", "日本", "😀", "a", "tok", "7", " ", "$", `\n`}
	name := func() string {
		var b strings.Builder
		for n := 1 + rng.Intn(4); n > 0; n-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		return b.String()
	}
	quote := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	want := map[string][2]string{}
	for i := 0; i < k.Iters; i++ {
		tok, ver := name(), name()
		if tok == ver {
			ver += "v"
		}
		table := fmt.Sprintf("gtext%d", i)
		testdb.Exec(t, raw, append([]string{fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, %s BIGINT NOT NULL DEFAULT 0, %s BIGINT NOT NULL DEFAULT 0)`, table, quote(tok), quote(ver))},
			postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: table}, tok, ver)...)...)
		want[table] = [2]string{tok, ver}
	}
	gf := postgres.Dialect.(dialect.GuardFinder)
	for _, enc := range []string{"UTF8", "LATIN1", "SQL_ASCII", "EUC_JP", "WIN1252"} {
		db := testdb.Open(t, "pgx", fencetest.WithParam(dsn, "client_encoding="+enc))
		rows, err := db.QueryContext(ctx, gf.GuardedTablesQuery())
		if err != nil {
			t.Fatalf("client_encoding %s: %v", enc, err)
		}
		seen := 0
		for rows.Next() {
			var sch, tbl, text string
			if err := rows.Scan(&sch, &tbl, &text); err != nil {
				t.Fatalf("client_encoding %s: %v", enc, err)
			}
			w, ok := want[tbl]
			if !ok {
				continue
			}
			seen++
			if tc, vc, ok := gf.GuardColumns(text); !ok || tc != w[0] || vc != w[1] {
				t.Errorf("client_encoding %s, %s: GuardColumns = %q, %q, %v; installed %q, %q", enc, tbl, tc, vc, ok, w[0], w[1])
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("client_encoding %s: %v", enc, err)
		}
		rows.Close()
		if seen != len(want) {
			t.Errorf("client_encoding %s: %d of %d guarded tables listed", enc, seen, len(want))
		}
	}
}
