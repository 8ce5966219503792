package fencetest

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// testOwnTrigger: a BEFORE UPDATE row trigger of the guarded table itself that keeps a
// fencing column's old value when the new one is NULL ("PATCH semantics", COALESCE /
// IFNULL) swallows the NULL the fenced UPDATE writes when a row carries a newer token,
// before the NOT NULL check that refuses it (PostgreSQL and MySQL check NOT NULL after
// the BEFORE row triggers). Made with the plain driver under a running pool, it is
// shown to let a stale holder's write through, the guard installed (on PostgreSQL the
// guard lets the NULL through for the constraint to refuse; on MySQL the trigger is
// made to fire before the guard's, as one created earlier does); schema.Check reports
// it (dialect.SideDoorOwnTrigger) with DROP TRIGGER, a fresh pool refuses the table's
// writes with ErrSchema before anything is written, and a BEFORE trigger that sets an
// unrelated column (updated_at) is no door. After the fix the stale write is fenced.
func (s *guardSuite) testOwnTrigger(t *testing.T) {
	e := setup(t, s.b)
	s.fixedAccounts(e, 1, 2)
	if _, err := e.db.ExecContext(tok(e.ctx, 9), e.q("UPDATE accounts SET balance = 1 WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	// Not a door: a trigger that maintains another column.
	switch {
	case s.b.Name == "postgres":
		s.exec(e, "ALTER TABLE accounts ADD COLUMN updated_at TIMESTAMPTZ NOT NULL DEFAULT now()",
			"CREATE FUNCTION acc_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated_at := now(); RETURN NEW; END $$",
			"CREATE TRIGGER acc_touch BEFORE INSERT OR UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION acc_touch()")
	default:
		s.exec(e, "ALTER TABLE accounts ADD COLUMN updated_at DATETIME(6) NULL",
			"CREATE TRIGGER acc_touch BEFORE UPDATE ON accounts FOR EACH ROW SET NEW.updated_at = NOW(6)")
	}
	spec := schema.GuardSpec{Table: "accounts"}
	wantClean(t, s.check(e, spec)[0])
	if _, err := e.fencedOn(t, "accounts").ExecContext(tok(e.ctx, 10), e.q("UPDATE accounts SET balance = 2 WHERE id = ?"), 2); err != nil {
		t.Fatalf("guarded write with an updated_at trigger: %v", err)
	}
	// The door.
	switch {
	case s.b.Name == "postgres":
		s.exec(e,
			"CREATE FUNCTION acc_keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.Fence_Token := COALESCE(NEW.fence_token, OLD.fence_token); NEW.version := COALESCE(NEW.version, OLD.version); RETURN NEW; END $$",
			"CREATE TRIGGER acc_keep BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION acc_keep()")
	default:
		s.exec(e, "CREATE TRIGGER acc_keep BEFORE UPDATE ON accounts FOR EACH ROW PRECEDES fencedsql_guard_accounts "+
			"SET NEW.`FENCE_TOKEN` = IFNULL(NEW.fence_token, OLD.fence_token), NEW.version = IFNULL(NEW.version, OLD.version)")
	}
	// A stale holder (token 3) writes row 1 (token 9) through the running pool.
	if _, err := e.db.ExecContext(tok(e.ctx, 3), e.q("UPDATE accounts SET balance = 666 WHERE id = ?"), 1); err != nil {
		t.Fatalf("stale write with the trigger before the fix: %v", err)
	}
	if r := e.row(1); r.balance != 666 || r.token != 9 {
		t.Fatalf("row 1 = %+v: the door did not open", r)
	}
	rep := s.check(e, spec)[0]
	sd := door(t, rep, dialect.SideDoorOwnTrigger)
	if rep.OK() || sd.Note || !strings.Contains(sd.Object, "acc_keep") || strings.Contains(sd.Object, "acc_touch") ||
		len(sd.Fix) != 1 || !strings.Contains(sd.Fix[0], "DROP TRIGGER") || !strings.Contains(sd.Problem, "never assigns the fencing columns") {
		t.Fatalf("own trigger door: %+v in %+v", sd, rep)
	}
	for _, o := range rep.SideDoors {
		if strings.Contains(o.Object, "acc_touch") {
			t.Fatalf("the updated_at trigger reported: %+v", o)
		}
	}
	// The lazy check of a fresh pool refuses the table's writes, nothing written.
	for _, q := range []string{"UPDATE accounts SET balance = 5 WHERE id = ?", "INSERT INTO accounts (id, balance) VALUES (?, 5)"} {
		_, err := e.fencedOn(t, "accounts").ExecContext(tok(e.ctx, 10), e.q(q), 2)
		wantErr(t, err, fencedsql.ErrSchema)
		if !strings.Contains(err.Error(), "acc_keep") || strings.Contains(err.Error(), "acc_touch") || !strings.Contains(err.Error(), "DROP TRIGGER") {
			t.Fatalf("lazy check: %v", err)
		}
	}
	// A claim too (PostgreSQL would let a stale token claim a newer token's row).
	tx, err := e.fencedOn(t, "accounts").BeginTx(tok(e.ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.QueryContext(tok(e.ctx, 10), e.q("SELECT balance FROM accounts WHERE id = ? FOR UPDATE"), 2)
	if err == nil {
		rows.Close()
	}
	_ = tx.Rollback()
	wantErr(t, err, fencedsql.ErrSchema)
	if r := e.row(2); r.balance != 2 || r.token != 10 || e.count() != 2 {
		t.Fatalf("row 2 = %+v, %d rows after a refused write", r, e.count())
	}
	s.applyFix(e, rep.Fix)
	wantClean(t, s.check(e, spec)[0])
	fresh := e.fencedOn(t, "accounts")
	_, err = fresh.ExecContext(tok(e.ctx, 3), e.q("UPDATE accounts SET balance = 667 WHERE id = ?"), 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := fresh.ExecContext(tok(e.ctx, 10), e.q("UPDATE accounts SET balance = 5 WHERE id = ?"), 2); err != nil {
		t.Fatalf("guarded write after the fix: %v", err)
	}
	if r := e.row(1); r.balance != 666 {
		t.Fatalf("row 1 = %+v after a fenced write", r)
	}
}
