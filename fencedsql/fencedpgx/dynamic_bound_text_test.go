// Statement text bound to a statement that runs dynamic SQL (red-team rt55e F1):
// judged only when it is a builtin value, refused otherwise; a batch step too.

package fencedpgx_test

import (
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/jackc/pgx/v5"
)

var boundBody string

// boundValuer is an int whose driver value is statement text.
type boundValuer int

func (boundValuer) Value() (driver.Value, error) { return boundBody, nil }

// TestDynamicBoundTextValuerFencedpgx: fencedpgx hands pgx's argument values to the engine
// unconverted; under WithDynamicSQL, DO $1 with a driver.Valuer whose value is a body
// that writes the guarded table unfenced is judged on the Go value's digits and sent:
// pgx's simple protocol inlines Value(). Must be ErrUnsupported, as the string is.
func TestDynamicBoundTextValuerFencedpgx(t *testing.T) {
	boundBody = "BEGIN UPDATE accounts SET balance = 999 WHERE id = 1; END"
	e := newPGEnv(t, "simple_protocol", fencedsql.WithDynamicSQL(true))
	if _, err := e.db.Exec(tok(e.ctx, 5), "INSERT INTO accounts (id, owner, balance) VALUES (1, 'a', 0)"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(tok(e.ctx, 5), "DO $1", boundBody); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("control, the body as a string: %v; want ErrUnsupported", err)
	}
	_, err := e.db.Exec(tok(e.ctx, 5), "DO $1", boundValuer(1))
	var bal int64
	if qerr := e.raw.QueryRow(e.ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); qerr != nil {
		t.Fatal(qerr)
	}
	if bal == 999 {
		t.Errorf("DO $1 with a driver.Valuer ran an unfenced UPDATE of the guarded table (err=%v)", err)
	}
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("DO $1 with a driver.Valuer: %v; want ErrUnsupported", err)
	}
}

// TestDynamicBoundTextBatchFencedpgx: a batch step DO $1 with a body bound as a
// string is judged as its literal (ErrUnsupported), under the simple protocol.
func TestDynamicBoundTextBatchFencedpgx(t *testing.T) {
	e := newPGEnv(t, "simple_protocol", fencedsql.WithDynamicSQL(true))
	if _, err := e.db.Exec(tok(e.ctx, 5), "INSERT INTO accounts (id, owner, balance) VALUES (1, 'a', 0)"); err != nil {
		t.Fatal(err)
	}
	b := &pgx.Batch{}
	b.Queue("SELECT 1")
	b.Queue("DO $1", "BEGIN UPDATE accounts SET balance = 999 WHERE id = 1; END")
	br := e.db.SendBatch(tok(e.ctx, 5), b)
	_, _ = br.Exec()
	_, err := br.Exec()
	cerr := br.Close()
	var bal int64
	if qerr := e.raw.QueryRow(e.ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); qerr != nil {
		t.Fatal(qerr)
	}
	if bal == 999 || (!errors.Is(err, fencedsql.ErrUnsupported) && !errors.Is(cerr, fencedsql.ErrUnsupported)) {
		t.Errorf("batched DO $1: balance %d, err %v, close %v; want ErrUnsupported, unchanged", bal, err, cerr)
	}
}
