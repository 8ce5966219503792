package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// A guarded child table whose foreign key to a guarded parent has ON DELETE CASCADE
// is refused by the pool's lazy check (ErrSchema naming the cascade door), as
// schema.Check reports it: the cascade of holder 50's fenced DELETE of parent 1
// deletes child 7 at its own token 30 and records its tombstone at 30, so holder 40's
// re-insert of child 7 through the pool used to succeed (red-team rt42a F3). The
// parent's fenced DELETE is refused too (ErrSchema naming the key, red-team rt49b F1).
func TestCascadeFromGuardedParentRefusedByLazyCheck(t *testing.T) {
	ctx := context.Background()
	file := "file:" + t.TempDir() + "/r.db?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)"
	raw, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		"CREATE TABLE parent (id INTEGER PRIMARY KEY, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id) ON DELETE CASCADE, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO parent VALUES (1, 30, 1), (2, 30, 1)",
		"INSERT INTO child VALUES (7, 1, 30, 1)",
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "parent"}, schema.GuardSpec{Table: "child"})
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "child"})
	if err != nil {
		t.Fatal(err)
	}
	cascade := false
	for _, sd := range reps[0].SideDoors {
		cascade = cascade || sd.Kind == dialect.SideDoorCascade && !sd.Note && strings.Contains(sd.Problem, "own token")
	}
	if reps[0].OK() || !cascade {
		t.Fatalf("schema.Check of child: OK=%v, want the ON DELETE CASCADE door (problems %q)", reps[0].OK(), reps[0].Problems)
	}
	db, err := sql.Open("fenced-sqlite", file+"&fenced_tables=parent,child")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The parent's DELETE is refused before it cascades (red-team rt49b F1).
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM parent WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "on child REFERENCES parent") || !strings.Contains(err.Error(), "RaiseTokenFloor") {
		t.Fatalf("fenced DELETE of parent 1 under 50 with ON DELETE CASCADE into guarded child: %v; want ErrSchema naming the key", err)
	}
	// On a plain connection the cascade goes through (the window the floor raise closes).
	if _, err := raw.ExecContext(ctx, "DELETE FROM parent WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 40), "INSERT INTO child (id, parent_id) VALUES (7, 2)")
	var n int
	if err := raw.QueryRow("SELECT COUNT(*) FROM child WHERE id = 7").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), string(dialect.SideDoorCascade)) {
		t.Errorf("child 7, deleted by holder 50's cascade, re-inserted under 40 through the pool: err %v, rows %d; want ErrSchema naming the cascade and no row", err, n)
	}
}

// The parent's DELETE is refused when its cascade reaches a guarded table through a
// table without the guards (parent -> middle -> child, ON DELETE CASCADE each), and
// allowed when the cascade reaches only unguarded tables (red-team rt49b F1).
func TestCascadeThroughUnguardedTableRefusesParentDelete(t *testing.T) {
	ctx := context.Background()
	file := "file:" + t.TempDir() + "/r.db?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)"
	raw, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		"CREATE TABLE parent (id INTEGER PRIMARY KEY, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"CREATE TABLE middle (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id) ON DELETE CASCADE)",
		"CREATE TABLE child (id INTEGER PRIMARY KEY, middle_id INTEGER REFERENCES middle(id) ON DELETE CASCADE, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO parent VALUES (1, 30, 1), (2, 30, 1)", "INSERT INTO middle VALUES (3, 1), (4, 2)", "INSERT INTO child VALUES (7, 3, 30, 1)",
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "parent"})
	db, err := sql.Open("fenced-sqlite", file+"&fenced_tables=parent")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// child not guarded: the cascade is no door.
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM parent WHERE id = 2"); err != nil {
		t.Fatalf("DELETE of parent 2 cascading into unguarded tables only: %v", err)
	}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "child"})
	db2, err := sql.Open("fenced-sqlite", file+"&fenced_tables=parent,child")
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	_, err = db2.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM parent WHERE id = 1")
	var n int
	if qerr := raw.QueryRow("SELECT COUNT(*) FROM child WHERE id = 7").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "on child REFERENCES middle") || n != 1 {
		t.Fatalf("DELETE of parent 1 cascading through middle into guarded child: err %v, child 7 rows %d; want ErrSchema naming the key, child 7 kept", err, n)
	}
}
