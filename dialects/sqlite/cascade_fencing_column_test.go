package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// cascadeChild creates the referenced table p and the table child with the given
// statements in a fresh file with foreign keys on, guards child (schema.Check's Fix)
// and returns the file's DSN, a plain connection and the report of a second Check.
func cascadeChild(t *testing.T, stmts ...string) (string, *sql.DB, schema.TableReport) {
	t.Helper()
	ctx := context.Background()
	file := "file:" + filepath.ToSlash(t.TempDir()) + "/r.db?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)"
	raw := testdb.Open(t, "sqlite", file)
	ownExec(t, raw, stmts...)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "child"})
	if err != nil {
		t.Fatal(err)
	}
	ownExec(t, raw, reps[0].Fix...)
	if reps, err = schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "child"}); err != nil {
		t.Fatal(err)
	}
	return file, raw, reps[0]
}

// A foreign key of a guarded table whose writing action (ON UPDATE CASCADE/SET
// NULL/SET DEFAULT, ON DELETE SET NULL/SET DEFAULT) sets the token or version column
// (red-team rt50d F1, the SQLite twin of PostgreSQL's rt45b F8): the cascaded UPDATE
// sets the version to the referenced row's new value or to the column's default, a
// higher version passes the guard, and a write of the referenced table without any
// token (through the fenced pool) rewrote child row 1, written under 60. It was a note
// ("the guard refuses it"); it is a cascade problem of schema.Check, without a Fix
// statement, and the pool's lazy check refuses child's guarded statements (ErrSchema).
func TestCascadeWritingFencingColumnIsADoorSQLite(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ name, child, parentRows string }{
		{"on update cascade",
			`CREATE TABLE child (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
			FOREIGN KEY (balance, version) REFERENCES p (b, v) ON UPDATE CASCADE)`,
			`INSERT INTO p VALUES (600, 1)`},
		{"on delete set default",
			`CREATE TABLE child (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT -1, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 1000000,
			FOREIGN KEY (balance, version) REFERENCES p (b, v) ON DELETE SET DEFAULT)`,
			`INSERT INTO p VALUES (600, 1), (-1, 1000000)`},
		{"on update set default, version only, other case",
			`CREATE TABLE child (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, VERSION BIGINT NOT NULL DEFAULT 1000000,
			FOREIGN KEY (VERSION) REFERENCES p (v) ON UPDATE SET DEFAULT)`,
			`INSERT INTO p VALUES (600, 1), (-1, 1000000)`},
		{"on update cascade, token",
			`CREATE TABLE child (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
			FOREIGN KEY (fence_token) REFERENCES p (v) ON UPDATE CASCADE)`,
			`INSERT INTO p VALUES (600, 1), (-1, 60)`},
		{"on delete cascade and on update cascade",
			`CREATE TABLE child (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
			FOREIGN KEY (balance, version) REFERENCES p (b, v) ON DELETE CASCADE ON UPDATE CASCADE)`,
			`INSERT INTO p VALUES (600, 1)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			file, _, rep := cascadeChild(t, `CREATE TABLE p (b INTEGER, v INTEGER, UNIQUE (b, v), UNIQUE (v))`, c.child, c.parentRows,
				`INSERT INTO child (id, balance, fence_token, version) VALUES (1, 600, 60, 1)`)
			door := false
			for _, sd := range rep.SideDoors {
				door = door || sd.Kind == dialect.SideDoorCascade && !sd.Note && len(sd.Fix) == 0 && strings.Contains(sd.Problem, "writes the fencing column")
			}
			if rep.OK() || !door {
				t.Errorf("schema.Check of child: OK=%v problems %q notes %q; want a cascade problem (writes the fencing column), no Fix", rep.OK(), rep.Problems, rep.Notes)
			}
			db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=child")
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), `UPDATE child SET balance = 7 WHERE id = 1`); !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), string(dialect.SideDoorCascade)) {
				t.Errorf("a guarded write of child through the pool: %v; want ErrSchema naming the cascade", err)
			}
		})
	}
}

// A cascading key that writes neither fencing column stays a note: schema.Check says
// OK and the pool's guarded writes pass.
func TestCascadeNotWritingFencingColumnIsANoteSQLite(t *testing.T) {
	file, _, rep := cascadeChild(t, `CREATE TABLE p (b INTEGER PRIMARY KEY)`, `INSERT INTO p VALUES (600), (7)`,
		`CREATE TABLE child (id INTEGER PRIMARY KEY, balance INTEGER REFERENCES p (b) ON UPDATE CASCADE ON DELETE SET NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO child (id, balance, fence_token, version) VALUES (1, 600, 60, 1)`)
	note := false
	for _, sd := range rep.SideDoors {
		note = note || sd.Kind == dialect.SideDoorCascade && sd.Note
	}
	if !rep.OK() || !note {
		t.Fatalf("schema.Check of child: OK=%v problems %q; want OK with a cascade note", rep.OK(), rep.Problems)
	}
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=child")
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 70), `UPDATE child SET balance = 7 WHERE id = 1`); err != nil {
		t.Errorf("a guarded write of child through the pool: %v", err)
	}
}

// ON DELETE SET NULL / SET DEFAULT of a key that writes no fencing column, into a
// guarded child: the cascaded UPDATE does not advance the version, the guard refuses
// it, and the parent's DELETE through the pool fails with the typed ErrGuard, the
// child unchanged (held in red-team rt50d).
func TestCascadeSetNullIntoGuardedRefusedByGuard(t *testing.T) {
	ctx := context.Background()
	for _, action := range []string{"SET NULL", "SET DEFAULT"} {
		file, raw, _ := cascadeChild(t, `CREATE TABLE parent (id INTEGER PRIMARY KEY)`,
			`CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER DEFAULT 2 REFERENCES parent (id) ON DELETE `+action+`, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
			`INSERT INTO parent VALUES (1), (2)`, `INSERT INTO child VALUES (7, 1, 60, 1)`)
		db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=child")
		_, err := db.ExecContext(fencedsql.WithToken(ctx, 40), `DELETE FROM parent WHERE id = 1`)
		var pid int64
		if qerr := raw.QueryRow(`SELECT parent_id FROM child WHERE id = 7`).Scan(&pid); qerr != nil || pid != 1 || !errors.Is(err, fencedsql.ErrGuard) {
			t.Errorf("%s: DELETE of parent 1 through the pool: %v; child parent_id %d (%v); want ErrGuard, unchanged", action, err, pid, qerr)
		}
	}
}
