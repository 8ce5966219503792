package sqlite_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Every SQLite trigger's body ends in "…; END": through a fenced_allow=ddl pool, a
// trigger of an unguarded table writing an unguarded table passes (it was refused as
// "transaction control as SQL text (END)", red-team rt50d F2), and fires.
func TestDDLPoolCreateTriggerSQLite(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	ownExec(t, raw, `CREATE TABLE other (id INTEGER PRIMARY KEY, n INTEGER)`, `CREATE TABLE other_log (id INTEGER, at TEXT)`)
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts&fenced_allow=ddl")
	q := `CREATE TRIGGER other_ai AFTER INSERT ON other BEGIN INSERT INTO other_log (id, at) VALUES (NEW.id, datetime('now')); END`
	if _, err := db.ExecContext(ctx, q); err != nil {
		t.Fatalf("%s through a fenced_allow=ddl pool: %v", q, err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO other (id, n) VALUES (1, 1)`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM other_log`).Scan(&n); err != nil || n != 1 {
		t.Errorf("other_log rows: %d, %v; want 1", n, err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TRIGGER t2 AFTER INSERT ON other BEGIN SELECT 1; END; COMMIT`); err == nil {
		t.Error("a COMMIT after the trigger's END passed")
	}
}
