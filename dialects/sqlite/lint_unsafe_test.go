// Lint tests of declarations that would let a stale write through (and of safe ones).

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// unsafeCase is one declaration that defeats the fence: seed rows (raw), the stale
// write that proves it (through the wrapper without the lint: it changes data wrongly
// or looks done), and the clause the refusal must name.
type unsafeCase struct {
	name, ddl string
	seed      []string
	stale     func(ctx context.Context, db *sql.DB) error // token 5 (the rows hold 10)
	wrong     func(t *testing.T, err error, rows string)  // the wrong outcome without the lint
	clause    string
}

func staleExec(q string) func(ctx context.Context, db *sql.DB) error {
	return func(ctx context.Context, db *sql.DB) error {
		_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), q)
		return err
	}
}

const fenceCols = "fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"

var unsafeCases = []unsafeCase{
	{name: "pk replace", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY ON CONFLICT REPLACE, v TEXT, " + fenceCols + ")",
		seed:  []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"},
		stale: staleExec("INSERT INTO t (id, v) VALUES (1, 'stale')"), clause: "PRIMARY KEY ON CONFLICT REPLACE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|stale|5|1" {
				t.Errorf("stale INSERT: %v, rows %s: want the newer row replaced", err, rows)
			}
		}},
	{name: "unique replace", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, mail TEXT UNIQUE ON CONFLICT REPLACE, " + fenceCols + ")",
		seed:  []string{"INSERT INTO t VALUES (1, 'new', 'a@x', 10, 3)"},
		stale: staleExec("INSERT INTO t (id, v, mail) VALUES (2, 'stale', 'a@x')"), clause: "UNIQUE ON CONFLICT REPLACE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "2|stale|a@x|5|1" {
				t.Errorf("stale INSERT: %v, rows %s: want the newer row deleted", err, rows)
			}
		}},
	{name: "table unique ignore", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, mail TEXT, " + fenceCols + ", CONSTRAINT one_mail UNIQUE (mail) ON CONFLICT IGNORE)",
		seed:  []string{"INSERT INTO t VALUES (1, 'new', 'a@x', 10, 3)"},
		stale: staleExec("INSERT INTO t (id, v, mail) VALUES (2, 'stale', 'a@x'), (3, 'stale', 'b@x')"), clause: "UNIQUE (mail) ON CONFLICT IGNORE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|new|a@x|10|3;3|stale|b@x|5|1" {
				t.Errorf("INSERT: %v, rows %s: want success with one row skipped", err, rows)
			}
		}},
	{name: "table pk ignore", ddl: "CREATE TABLE t (a INT, b INT, v TEXT, " + fenceCols + ", PRIMARY KEY (a, b) ON CONFLICT IGNORE) WITHOUT ROWID",
		seed:  []string{"INSERT INTO t VALUES (1, 1, 'new', 10, 3)"},
		stale: staleExec("INSERT INTO t (a, b, v) VALUES (1, 1, 'stale')"), clause: "PRIMARY KEY (a, b) ON CONFLICT IGNORE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|1|new|10|3" {
				t.Errorf("INSERT: %v, rows %s: want success with nothing written", err, rows)
			}
		}},
	{name: "token not null replace", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token BIGINT NOT NULL ON CONFLICT REPLACE DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed:  []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"},
		stale: staleExec("UPDATE t SET v = 'stale' WHERE id = 1"), clause: "NOT NULL ON CONFLICT REPLACE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|stale|0|4" {
				t.Errorf("stale UPDATE: %v, rows %s: want it accepted and the token reset to 0", err, rows)
			}
		}},
	{name: "token not null ignore", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, \"FENCE_TOKEN\" BIGINT CONSTRAINT tok NOT NULL ON CONFLICT IGNORE DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed:  []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"},
		stale: staleExec("UPDATE t SET v = 'stale' WHERE id = 1"), clause: "NOT NULL ON CONFLICT IGNORE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|new|10|3" {
				t.Errorf("stale UPDATE: %v, rows %s: want success with nothing written (no ErrFenced)", err, rows)
			}
		}},
	{name: "token not null fail", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token BIGINT NOT NULL ON CONFLICT FAIL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed:  []string{"INSERT INTO t VALUES (1, 'old', 1, 3), (2, 'new', 10, 3)"},
		stale: staleExec("UPDATE t SET v = 'stale'"), clause: "NOT NULL ON CONFLICT FAIL",
		wrong: func(t *testing.T, err error, rows string) {
			if !errors.Is(err, fencedsql.ErrFenced) || rows != "1|stale|5|4;2|new|10|3" {
				t.Errorf("stale UPDATE: %v, rows %s: want ErrFenced with the first row changed", err, rows)
			}
		}},
	{name: "version not null replace", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL ON CONFLICT REPLACE DEFAULT 0)",
		seed: []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"},
		stale: func(ctx context.Context, db *sql.DB) error {
			_, err := db.ExecContext(fencedsql.ExpectVersion(fencedsql.WithToken(ctx, 10), 2), "UPDATE t SET v = 'stale' WHERE id = 1")
			return err
		}, clause: "NOT NULL ON CONFLICT REPLACE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|stale|10|0" {
				t.Errorf("UPDATE expecting version 2: %v, rows %s: want it accepted and the version reset", err, rows)
			}
		}},
	{name: "text token", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token TEXT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed: []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"},
		stale: func(ctx context.Context, db *sql.DB) error {
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 9), "UPDATE t SET v = 'stale' WHERE id = 1")
			return err
		}, clause: "fence_token is declared TEXT (TEXT affinity)",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|stale|9|4" {
				t.Errorf("token 9 over 10: %v, rows %s: want it accepted ('10' <= '9')", err, rows)
			}
		}},
	{name: "real token", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token DOUBLE NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed: []string{"INSERT INTO t VALUES (1, 'new', 9007199254740993, 3)"},
		stale: func(ctx context.Context, db *sql.DB) error {
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 9007199254740992), "UPDATE t SET v = 'stale' WHERE id = 1")
			return err
		}, clause: "fence_token is declared DOUBLE (REAL affinity)",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || !strings.HasPrefix(rows, "1|stale|") {
				t.Errorf("token 2^53 over 2^53+1: %v, rows %s: want it accepted (rounded)", err, rows)
			}
		}},
	{name: "blob token", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed: []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"}, stale: staleExec("UPDATE t SET v = 'stale' WHERE id = 1"),
		clause: "fence_token is declared without a type (BLOB affinity)",
		// Through the wrapper a BLOB-affinity column holds integers and fences
		// correctly; it is refused for values written otherwise (see LintSchema).
		wrong: func(t *testing.T, err error, rows string) {
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("stale UPDATE: %v, rows %s", err, rows)
			}
		}},
}

func dump(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query("SELECT * FROM t ORDER BY 1, 2")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		s := make([]string, len(cols))
		for i, v := range vals {
			s[i] = v.String
		}
		out = append(out, strings.Join(s, "|"))
	}
	return strings.Join(out, ";")
}

// Each unsafe declaration first lets a stale (or silently skipped) write through the
// wrapper without the lint; through "fenced-sqlite" the first guarded write is refused
// with ErrSchema before anything is written — the stale one and a fresh one alike —
// and schema.Check reports the same problem, naming the table, the clause and the fix.
func TestLintRefusesUnsafeDeclarations(t *testing.T) {
	ctx := context.Background()
	for _, c := range unsafeCases {
		t.Run(c.name, func(t *testing.T) {
			dsn, raw := lintDB(t)
			mustExec(t, raw, append([]string{c.ddl}, c.seed...)...)

			before := fencedsql.OpenDB(fencedsql.DSNConnector(raw.Driver(), dsn), fencedsql.WithDialect(noLint{Dialect}), fencedsql.Guard("t"))
			defer before.Close()
			err := c.stale(ctx, before)
			c.wrong(t, err, dump(t, raw))

			mustExec(t, raw, "DELETE FROM t")
			mustExec(t, raw, c.seed...)
			seeded := dump(t, raw)
			db, err := sql.Open(DriverName, dsn+"&fenced_tables=t")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = c.stale(ctx, db)
			var se *fencedsql.SchemaError
			if !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("stale write through fenced-sqlite: %v, want ErrSchema", err)
			}
			for _, want := range []string{"guarded table t:", c.clause, "rebuild t "} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE t SET v = 'fresh'"); !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("fresh write: %v, want ErrSchema", err)
			}
			if got := dump(t, raw); got != seeded {
				t.Errorf("rows %s after the refusals, want %s", got, seeded)
			}
			reps, err := schema.Check(ctx, raw, Dialect, schema.GuardSpec{Table: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(reps[0].Problems, "; ") == "" || !strings.Contains(strings.Join(reps[0].Problems, "; "), se.Problem) {
				t.Errorf("schema.Check problems %q lack the lazy check's %q", reps[0].Problems, se.Problem)
			}
		})
	}
}

// Safe declarations still work through "fenced-sqlite": the default ABORT, explicit
// ABORT and ROLLBACK, FAIL on a UNIQUE, STRICT tables, INTEGER PRIMARY KEY, WITHOUT
// ROWID, NUMERIC affinity. A stale write fails with ErrFenced and changes nothing; a
// newer token writes.
func TestLintAcceptsSafeDeclarations(t *testing.T) {
	ctx := context.Background()
	for name, ddl := range map[string]string{
		"default abort":          "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, " + fenceCols + ")",
		"explicit abort":         "CREATE TABLE t (id INTEGER PRIMARY KEY ON CONFLICT ABORT, v TEXT UNIQUE ON CONFLICT ABORT, fence_token BIGINT NOT NULL ON CONFLICT ABORT DEFAULT 0, version BIGINT NOT NULL ON CONFLICT ABORT DEFAULT 0)",
		"rollback":               "CREATE TABLE t (id INTEGER PRIMARY KEY ON CONFLICT ROLLBACK, v TEXT, fence_token BIGINT NOT NULL ON CONFLICT ROLLBACK DEFAULT 0, version BIGINT NOT NULL ON CONFLICT ROLLBACK DEFAULT 0)",
		"unique fail":            "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, mail TEXT UNIQUE ON CONFLICT FAIL, " + fenceCols + ")",
		"other not null replace": "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL ON CONFLICT REPLACE DEFAULT 'x', " + fenceCols + ")",
		"strict":                 "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token INTEGER NOT NULL DEFAULT 0, version INT NOT NULL DEFAULT 0) STRICT",
		"without rowid":          "CREATE TABLE t (id INT, v TEXT, " + fenceCols + ", PRIMARY KEY (id)) WITHOUT ROWID",
		"strict without rowid":   "CREATE TABLE t (id INT PRIMARY KEY, v TEXT, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0) STRICT, WITHOUT ROWID",
		"numeric":                "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token NUMERIC NOT NULL DEFAULT 0, version DECIMAL(20) NOT NULL DEFAULT 0)",
		"comment tricks":         "CREATE TABLE t (id INTEGER PRIMARY KEY /* ON CONFLICT REPLACE */, v TEXT DEFAULT 'ON CONFLICT REPLACE', \"on conflict replace\" INT, " + fenceCols + ") -- ON CONFLICT IGNORE",
	} {
		t.Run(name, func(t *testing.T) {
			dsn, raw := lintDB(t)
			mustExec(t, raw, ddl, "INSERT INTO t (id, v, fence_token, version) VALUES (1, 'new', 10, 3)")
			db, err := sql.Open(DriverName, dsn+"&fenced_tables=t")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE t SET v = 'stale' WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale UPDATE: %v, want ErrFenced", err)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 11), "UPDATE t SET v = 'newer' WHERE id = 1"); err != nil {
				t.Fatalf("newer UPDATE: %v", err)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 12), "INSERT INTO t (id, v) VALUES (2, 'two')"); err != nil {
				t.Fatalf("INSERT: %v", err)
			}
			var v string
			var tok int64
			if err := raw.QueryRow("SELECT v, fence_token FROM t WHERE id = 1").Scan(&v, &tok); err != nil || v != "newer" || tok != 11 {
				t.Fatalf("row 1: %q %d %v", v, tok, err)
			}
			reps, err := schema.Check(ctx, raw, Dialect, schema.GuardSpec{Table: "t"})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range reps[0].Problems {
				if strings.Contains(p, "ON CONFLICT") || strings.Contains(p, "affinity") || strings.Contains(p, "declared") {
					t.Errorf("schema.Check: %q", p)
				}
			}
		})
	}
}

// A cascading foreign key whose child is a guarded table is reported by schema.Check
// (SideDoorFinder): ON DELETE CASCADE is a problem that says to rebuild with
// RESTRICT; ON DELETE SET NULL / SET DEFAULT and ON UPDATE CASCADE / SET NULL / SET
// DEFAULT are notes because the guard refuses the cascaded UPDATE — shown here: the
// parent's write fails and the guarded rows stay.
func TestLintCascadeChildReported(t *testing.T) {
	ctx := context.Background()
	g := Dialect.(dialect.Guarder)
	for _, action := range []string{"ON DELETE CASCADE", "ON DELETE SET NULL", "ON DELETE SET DEFAULT", "ON UPDATE CASCADE", "ON UPDATE SET NULL", "ON UPDATE SET DEFAULT", "ON DELETE RESTRICT", "ON DELETE NO ACTION"} {
		t.Run(action, func(t *testing.T) {
			_, raw := lintDB(t)
			raw.SetMaxOpenConns(1)
			mustExec(t, raw, "PRAGMA foreign_keys = ON", "CREATE TABLE parent (id INTEGER PRIMARY KEY)",
				"CREATE TABLE t (id INTEGER PRIMARY KEY, p INT DEFAULT 0 REFERENCES parent (id) "+action+", "+fenceCols+")",
				"INSERT INTO parent VALUES (0), (1)", "INSERT INTO t VALUES (1, 1, 10, 3)")
			mustExec(t, raw, g.GuardDDL(dialect.TableName{Name: "t"}, "fence_token", "version")...)
			reps, err := schema.Check(ctx, raw, Dialect, schema.GuardSpec{Table: "t"})
			if err != nil {
				t.Fatal(err)
			}
			r := reps[0]
			switch {
			case action == "ON DELETE CASCADE":
				if len(r.SideDoors) != 1 || r.SideDoors[0].Note || r.OK() || !strings.Contains(r.SideDoors[0].Problem, "RESTRICT") {
					t.Fatalf("report %+v", r)
				}
			case strings.Contains(action, "RESTRICT") || strings.Contains(action, "NO ACTION"):
				if len(r.SideDoors) != 0 {
					t.Fatalf("side doors %+v", r.SideDoors)
				}
			default:
				if len(r.SideDoors) != 1 || !r.SideDoors[0].Note {
					t.Fatalf("report %+v", r)
				}
				write := "DELETE FROM parent WHERE id = 1"
				if strings.HasPrefix(action, "ON UPDATE") {
					write = "UPDATE parent SET id = 7 WHERE id = 1"
				}
				if _, err := raw.Exec(write); err == nil {
					t.Fatalf("%s: the cascade changed the guarded row (%s)", write, dump(t, raw))
				}
				if got := dump(t, raw); got != "1|1|10|3" {
					t.Fatalf("rows %s", got)
				}
			}
		})
	}
}
