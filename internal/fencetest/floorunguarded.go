package fencetest

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// testFloorListedUnguarded: where the database has a token floor (a guard is installed
// on some table), a table the pool lists that carries its fencing columns but no
// guard (its installation lost with an asynchronous failover's tail, G14) cannot
// honour the floor, so the pool refuses its writes — *SchemaError, ErrSchema, "not
// guarded on this server", naming the schema tool's -apply — while the guarded table's
// writes go on. Before any guard is installed (no floor) the same pool configuration
// fences the table with the wrapper alone.
func (s *guardSuite) testFloorListedUnguarded(t *testing.T) {
	e := setup(t, s.b)
	execAll(t, e.ctx, e.raw, []string{strings.Replace(s.b.TableDDL, "accounts", "items", 1)})
	e.seed(5, 1)
	ins := e.q("INSERT INTO items (id, balance) VALUES (?, ?)")
	upd := e.q("UPDATE items SET balance = balance + 1 WHERE id = ?")
	open := func() *sql.DB {
		db, err := sql.Open(s.b.DriverName, WithParam(e.dsn, "fenced_tables=accounts,items"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	if _, err := open().ExecContext(tok(e.ctx, 7), ins, 1, 1); err != nil {
		t.Fatalf("wrapper-only fencing where no guard (no floor) is installed: %v", err)
	}
	s.install(e, "accounts")
	db := open()
	if _, err := db.ExecContext(tok(e.ctx, 7), e.q("UPDATE accounts SET balance = 1 WHERE id = ?"), 1); err != nil {
		t.Fatalf("the guarded table: %v", err)
	}
	for _, w := range []struct {
		q    string
		args []any
	}{{upd, []any{1}}, {ins, []any{2, 1}}} {
		_, err := db.ExecContext(tok(e.ctx, 7), w.q, w.args...)
		var se *fencedsql.SchemaError
		if !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "not guarded on this server") || !strings.Contains(err.Error(), "-apply") {
			t.Errorf("%s: %v; want a *SchemaError: not guarded on this server although the database has a token floor", w.q, err)
		}
	}
	var n int
	if err := e.raw.QueryRowContext(e.ctx, "SELECT COUNT(*) FROM items").Scan(&n); err != nil || n != 1 {
		t.Errorf("items holds %d rows (%v); want the one written before the guard, the refused INSERT changed it", n, err)
	}
}
