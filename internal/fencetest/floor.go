package fencetest

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// testFloor: the token floor (G14). Once the floor is raised, no write whose token is
// below it changes a row — UPDATE, INSERT, upsert, the DELETE's fencing UPDATE, through
// the wrapper or a plain connection — and it fails with ErrBelowFloor (and ErrFenced),
// not the plain ErrFenced of a newer row. Tokens at or above the floor write as before;
// the floor never goes down; the fenced pool cannot touch the floor table; MaxToken
// sees both the rows and the floor.
func (s *guardSuite) testFloor(t *testing.T) {
	e := setup(t, s.b)
	s.install(e, "accounts")
	e.seed(5, 1, 2)
	if f, err := schema.TokenFloor(e.ctx, e.raw, s.d); err != nil || f != 0 {
		t.Fatalf("TokenFloor after install = %d, %v; want 0", f, err)
	}
	// Before any floor: a write with token 6 over rows of 5 passes.
	upd := e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?")
	if _, err := e.db.ExecContext(tok(e.ctx, 6), upd, 2); err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(e.ctx, e.raw, s.d, 10); err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(e.ctx, e.raw, s.d, 7); err != nil { // lower: no change
		t.Fatal(err)
	}
	if f, err := schema.TokenFloor(e.ctx, e.raw, s.d); err != nil || f != 10 {
		t.Fatalf("TokenFloor = %d, %v; want 10 (a lower raise must not lower it)", f, err)
	}
	before := []row{e.row(1), e.row(2)}
	wantFloor := func(what string, err error) {
		t.Helper()
		var fe *fencedsql.BelowFloorError
		if !errors.Is(err, fencedsql.ErrBelowFloor) || !errors.Is(err, fencedsql.ErrFenced) || !errors.As(err, &fe) {
			t.Fatalf("%s: err = %v, want ErrBelowFloor and ErrFenced", what, err)
		}
		if !strings.Contains(err.Error(), "lockfloor") || !strings.Contains(err.Error(), "accounts") {
			t.Fatalf("%s: the error does not name the table and the procedure: %v", what, err)
		}
	}
	// Through the wrapper, tokens 8 and 9 (above the rows' 5 and 6, below the floor).
	_, err := e.db.ExecContext(tok(e.ctx, 8), upd, 1)
	wantFloor("UPDATE", err)
	_, err = e.db.ExecContext(tok(e.ctx, 9), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 3, 1)
	wantFloor("INSERT", err)
	_, err = e.db.ExecContext(tok(e.ctx, 9), e.q(s.b.Upsert), 1, 555)
	wantFloor("upsert of an existing row", err)
	_, err = e.db.ExecContext(tok(e.ctx, 9), e.q(s.b.Upsert), 4, 555)
	wantFloor("upsert of a new row", err)
	_, err = e.db.ExecContext(tok(e.ctx, 9), e.q("DELETE FROM accounts WHERE id = ?"), 1)
	wantFloor("DELETE", err)
	// Through a plain connection: the database itself refuses.
	_, err = e.raw.ExecContext(e.ctx, e.q("UPDATE accounts SET balance = 0, fence_token = 9, version = version + 1 WHERE id = ?"), 1)
	if err == nil {
		t.Fatal("a plain UPDATE with a token below the floor passed")
	}
	wantFloor("plain UPDATE", fencedsql.AsGuardError(s.d, err))
	_, err = e.raw.ExecContext(e.ctx, e.q("INSERT INTO accounts (id, balance, fence_token, version) VALUES (?, 1, 9, 1)"), 5)
	if err == nil {
		t.Fatal("a plain INSERT with a token below the floor passed")
	}
	wantFloor("plain INSERT", fencedsql.AsGuardError(s.d, err))
	if got := []row{e.row(1), e.row(2)}; got[0] != before[0] || got[1] != before[1] || e.count() != 2 {
		t.Fatalf("rows changed by refused writes: %+v (before %+v), %d rows", got, before, e.count())
	}
	// The fenced pool cannot lower the floor.
	for _, q := range []string{"UPDATE fencedsql_floor SET floor = 0", "DELETE FROM fencedsql_floor", "DROP TABLE fencedsql_floor"} {
		if _, err := e.db.ExecContext(tok(e.ctx, 11), q); err == nil {
			t.Fatalf("the fenced pool ran %q", q)
		}
	}
	// At and above the floor: written.
	if _, err := e.db.ExecContext(tok(e.ctx, 10), upd, 1); err != nil {
		t.Fatalf("UPDATE at the floor: %v", err)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 12), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 3, 1); err != nil {
		t.Fatalf("INSERT above the floor: %v", err)
	}
	if r := e.row(1); r.token != 10 || r.balance != before[0].balance+1 {
		t.Fatalf("row 1 = %+v after the write at the floor", r)
	}
	// MaxToken: the rows' highest (12) beats floor-1 (9); then a floor above the rows.
	if m, err := schema.MaxToken(e.ctx, e.raw, s.d, schema.GuardSpec{Table: "accounts"}); err != nil || m != 12 {
		t.Fatalf("MaxToken = %d, %v; want 12", m, err)
	}
	if err := schema.RaiseTokenFloor(e.ctx, e.raw, s.d, 100); err != nil {
		t.Fatal(err)
	}
	if m, err := schema.MaxToken(e.ctx, e.raw, s.d, schema.GuardSpec{Table: "accounts"}); err != nil || m != 99 {
		t.Fatalf("MaxToken = %d, %v; want 99 (floor − 1)", m, err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 13), upd, 3)
	wantFloor("UPDATE after the second raise", err)
}

// testFloorSnapshot: a transaction whose snapshot predates a raise of the floor
// (REPEATABLE READ; its first read took the snapshot) does not write under a token
// below the raised floor — not an UPDATE, an INSERT, or a DELETE — although the floor
// table, as its snapshot shows it, still holds the old floor.
func (s *guardSuite) testFloorSnapshot(t *testing.T) {
	e := setup(t, s.b)
	s.install(e, "accounts")
	e.seed(5, 1, 2)
	for _, c := range []struct{ what, q string }{
		{"UPDATE", "UPDATE accounts SET balance = balance + 1 WHERE id = ?"},
		{"INSERT", "INSERT INTO accounts (id, balance) VALUES (? + 10, 1)"},
		{"DELETE", "DELETE FROM accounts WHERE id = ?"},
	} {
		floor := uint64(10)
		if c.what == "INSERT" {
			floor = 11
		} else if c.what == "DELETE" {
			floor = 12
		}
		tx, err := e.db.BeginTx(tok(e.ctx, floor-2), &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := tx.QueryRowContext(e.ctx, "SELECT COUNT(*) FROM accounts").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if err := schema.RaiseTokenFloor(e.ctx, e.raw, s.d, floor); err != nil {
			t.Fatal(err)
		}
		_, err = tx.ExecContext(e.ctx, e.q(c.q), 1)
		if !errors.Is(err, fencedsql.ErrBelowFloor) {
			t.Fatalf("%s under token %d in a snapshot older than the raise to %d: err = %v, want ErrBelowFloor", c.what, floor-2, floor, err)
		}
		tx.Rollback()
	}
	if e.count() != 2 {
		t.Fatalf("%d rows, want 2", e.count())
	}
}

// testFloorNoGuard: where no guard is installed, raising the floor would refuse nothing
// (a red-team pass: RaiseTokenFloor created a floor table no guard read, TokenFloor
// reported the raised floor, and the failover tool exited 0). RaiseTokenFloor and
// TokenFloor fail with ErrNoFloorGuard and create nothing; MaxToken reads the rows
// alone; once the guard is installed the raise reaches it.
func (s *guardSuite) testFloorNoGuard(t *testing.T) {
	e := setup(t, s.b)
	e.seed(5, 1)
	err := schema.RaiseTokenFloor(e.ctx, e.raw, s.d, 1000)
	var fe *schema.FloorError
	if !errors.Is(err, schema.ErrNoFloorGuard) || !errors.As(err, &fe) {
		t.Fatalf("RaiseTokenFloor without a guard: err = %v, want ErrNoFloorGuard", err)
	}
	if _, err := e.raw.ExecContext(e.ctx, "SELECT floor FROM fencedsql_floor"); err == nil {
		t.Fatal("RaiseTokenFloor without a guard created the floor table")
	}
	if f, err := schema.TokenFloor(e.ctx, e.raw, s.d); !errors.Is(err, schema.ErrNoFloorGuard) {
		t.Fatalf("TokenFloor without a guard = %d, %v; want ErrNoFloorGuard", f, err)
	}
	if m, err := schema.MaxToken(e.ctx, e.raw, s.d, schema.GuardSpec{Table: "accounts"}); err != nil || m != 5 {
		t.Fatalf("MaxToken without a guard = %d, %v; want 5", m, err)
	}
	s.install(e, "accounts")
	if err := schema.RaiseTokenFloor(e.ctx, e.raw, s.d, 1000); err != nil {
		t.Fatalf("RaiseTokenFloor with the guard: %v", err)
	}
	floors, err := schema.TokenFloors(e.ctx, e.raw, s.d)
	if err != nil || len(floors) != 1 || floors[0].Floor != 1000 || !strings.HasSuffix(floors[0].Table, ".fencedsql_floor") {
		t.Fatalf("TokenFloors = %+v, %v; want one floor table at 1000", floors, err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 20), e.q("UPDATE accounts SET balance = 1 WHERE id = ?"), 1)
	if !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("UPDATE under 20 below the floor 1000: %v, want ErrBelowFloor", err)
	}
}

// MaxToken counts the tokens only tombstones keep: a key deleted under the highest
// token leaves that token nowhere else, and a new lock service started at a lower
// MaxToken would hand out tokens the tombstone refuses (its holder could not re-create
// the key until the service passed the deleter's token).
func (s *guardSuite) testMaxTokenTombstones(t *testing.T) {
	e := setup(t, s.b)
	e.seed(5, 1, 2)
	s.applyFix(e, s.check(e, schema.GuardSpec{Table: "accounts"})[0].Fix)
	if _, err := e.db.ExecContext(tok(e.ctx, 100), e.q("DELETE FROM accounts WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	for _, specs := range [][]schema.GuardSpec{{{Table: "accounts"}}, nil} {
		if m, err := schema.MaxToken(e.ctx, e.raw, s.d, specs...); err != nil || m != 100 {
			t.Fatalf("MaxToken(%v) = %d, %v; want 100, the deleted key's tombstone", specs, m, err)
		}
	}
	// A holder of the next token re-creates the key.
	if _, err := e.db.ExecContext(tok(e.ctx, 101), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 1, 1); err != nil {
		t.Fatalf("re-insert above MaxToken: %v", err)
	}
}
