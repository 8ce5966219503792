package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// Red-team rt65a F1, the SQLite member of the class: a table guarded by the wrapper
// alone (listed in fenced_tables, no guard trigger installed) with foreign keys to an
// unguarded table par whose actions rewrite its rows by an UPDATE (ON DELETE SET NULL
// / SET DEFAULT, ON UPDATE CASCADE / SET NULL) counted them as notes ("the guard
// refuses it": there was none), so a write of par through the pool, with a stale
// token or none, rewrote rows written under a newer token. Now each is a cascade door
// the lazy check refuses (ErrSchema, nothing written), as a trigger on par doing the
// same write; with the guard installed they are notes again and a new pool writes.
func TestCascadeIntoWrapperOnlyGuardedTableIsADoor(t *testing.T) {
	ctx := context.Background()
	file := "file:" + t.TempDir() + "/w.db?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)"
	raw, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		"CREATE TABLE par (id INTEGER PRIMARY KEY)",
		"INSERT INTO par VALUES (0), (1)",
		"CREATE TABLE acc (id INTEGER PRIMARY KEY, p1 INTEGER DEFAULT 0, p2 INTEGER DEFAULT 0, p3 INTEGER DEFAULT 0, p4 INTEGER DEFAULT 0, p5 INTEGER DEFAULT 0, " +
			"fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0, " +
			"FOREIGN KEY (p1) REFERENCES par (id) ON DELETE SET NULL, FOREIGN KEY (p2) REFERENCES par (id) ON DELETE SET DEFAULT, " +
			"FOREIGN KEY (p3) REFERENCES par (id) ON UPDATE CASCADE, FOREIGN KEY (p4) REFERENCES par (id) ON UPDATE SET NULL, " +
			"FOREIGN KEY (p5) REFERENCES par (id) ON DELETE RESTRICT ON UPDATE NO ACTION)",
		"INSERT INTO acc VALUES (1, 1, 1, 1, 1, 0, 50, 7)",
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("fenced-sqlite", file+"&fenced_tables=acc")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO acc (id) VALUES (3)")
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("guarded INSERT into the wrapper-only acc with cascading keys from par: %v, want ErrSchema (cascade doors)", err)
	}
	for _, k := range []string{"(p1) REFERENCES par", "(p2) REFERENCES par", "(p3) REFERENCES par", "(p4) REFERENCES par"} {
		if !strings.Contains(err.Error(), "cascade "+k) {
			t.Errorf("the refusal does not name the cascade door %s: %v", k, err)
		}
	}
	if strings.Contains(err.Error(), "(p5)") {
		t.Errorf("the refusal names the key with RESTRICT/NO ACTION: %v", err)
	}
	var n int
	if qerr := raw.QueryRow("SELECT count(*) FROM acc WHERE id = 3").Scan(&n); qerr != nil || n != 0 {
		t.Fatalf("the refused INSERT wrote: %d rows, %v", n, qerr)
	}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "acc"})
	db2, err := sql.Open("fenced-sqlite", file+"&fenced_tables=acc")
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if _, err := db2.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO acc (id) VALUES (3)"); err != nil {
		t.Fatalf("guarded INSERT with the guard installed: %v, want it written (the cascades are notes)", err)
	}
	if _, err := db2.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE par SET id = 2 WHERE id = 1"); err == nil {
		t.Errorf("UPDATE of par's key under token 10 with the guard installed: nil, want the guard's refusal of the cascade")
	}
	var p3 int64
	if qerr := raw.QueryRow("SELECT p3 FROM acc WHERE id = 1 AND fence_token = 50 AND version = 7").Scan(&p3); qerr != nil || p3 != 1 {
		t.Errorf("acc's row 1 (token 50) after the refused cascade: p3 %d, %v", p3, qerr)
	}
}
