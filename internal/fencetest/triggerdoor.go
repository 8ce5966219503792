package fencetest

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// testTriggerDoor: a trigger on another table whose body writes accounts is a side
// door (dialect.TriggerDoorFinder). Made with the plain driver, it is shown to let a
// stale holder write accounts through the fenced pool (an INSERT into the other
// table); schema.Check reports it with DROP TRIGGER, a trigger that only reads
// accounts is not reported, a fresh pool refuses guarded writes to accounts with
// ErrSchema before anything is sent, and after the fix both are clean.
func (s *guardSuite) testTriggerDoor(t *testing.T) {
	if _, ok := s.d.(dialect.TriggerDoorFinder); !ok {
		t.Fatalf("dialect %s does not implement dialect.TriggerDoorFinder", s.d.Name())
	}
	e := setup(t, s.b)
	s.fixedAccounts(e, 1, 2)
	if _, err := e.db.ExecContext(tok(e.ctx, 9), e.q("UPDATE accounts SET balance = 1 WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	s.exec(e, "CREATE TABLE jobs (id BIGINT PRIMARY KEY, acct BIGINT, amount BIGINT)")
	switch {
	case s.b.Name == "postgres":
		s.exec(e,
			"CREATE FUNCTION jobs_apply() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE accounts SET balance = NEW.amount, version = version + 1 WHERE id = NEW.acct; RETURN NULL; END $$",
			"CREATE TRIGGER jobs_apply AFTER INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION jobs_apply()",
			"CREATE FUNCTION jobs_check() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NOT EXISTS (SELECT 1 FROM accounts WHERE id = NEW.acct) THEN RAISE EXCEPTION 'no account'; END IF; RETURN NEW; END $$",
			"CREATE TRIGGER jobs_check BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION jobs_check()")
	case s.b.MySQL:
		s.exec(e,
			"CREATE TRIGGER jobs_apply AFTER INSERT ON jobs FOR EACH ROW UPDATE accounts SET balance = NEW.amount, version = version + 1 WHERE id = NEW.acct",
			"CREATE TRIGGER jobs_check BEFORE INSERT ON jobs FOR EACH ROW SET NEW.amount = NEW.amount + (SELECT COUNT(*) FROM accounts WHERE id < 0)")
	default:
		s.exec(e,
			"CREATE TRIGGER jobs_apply AFTER INSERT ON jobs BEGIN UPDATE accounts SET balance = NEW.amount, version = version + 1 WHERE id = NEW.acct; END",
			"CREATE TRIGGER jobs_check BEFORE INSERT ON jobs BEGIN SELECT RAISE(ABORT, 'no account') WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE id = NEW.acct); END")
	}
	// The door: a stale holder (token 3) sets row 1 (token 9) through the trigger.
	if _, err := e.db.ExecContext(tok(e.ctx, 3), e.q("INSERT INTO jobs (id, acct, amount) VALUES (?, ?, ?)"), 1, 1, 777); err != nil {
		t.Fatalf("INSERT into jobs before the fix: %v", err)
	}
	if r := e.row(1); r.balance != 777 {
		t.Fatalf("row 1 = %+v: the door did not open", r)
	}
	spec := schema.GuardSpec{Table: "accounts"}
	rep := s.check(e, spec)[0]
	sd := door(t, rep, dialect.SideDoorTrigger)
	if rep.OK() || sd.Note || !strings.Contains(sd.Object, "jobs_apply") || !strings.Contains(sd.Object, "jobs") || len(sd.Fix) != 1 || !strings.Contains(sd.Fix[0], "DROP TRIGGER") {
		t.Fatalf("trigger door: %+v in %+v", sd, rep)
	}
	// The lazy check of a fresh pool refuses the first guarded write.
	fresh := e.fencedOn(t, "accounts")
	_, err := fresh.ExecContext(tok(e.ctx, 10), e.q("UPDATE accounts SET balance = 5 WHERE id = ?"), 2)
	wantErr(t, err, fencedsql.ErrSchema)
	if !strings.Contains(err.Error(), "jobs_apply") || strings.Contains(err.Error(), "jobs_check") || !strings.Contains(err.Error(), "DROP TRIGGER") {
		t.Fatalf("lazy check: %v", err)
	}
	if r := e.row(2); r.balance != 100 {
		t.Fatalf("row 2 = %+v after a refused write", r)
	}
	s.applyFix(e, rep.Fix)
	wantClean(t, s.check(e, spec)[0])
	if _, err := e.fencedOn(t, "accounts").ExecContext(tok(e.ctx, 10), e.q("UPDATE accounts SET balance = 5 WHERE id = ?"), 2); err != nil {
		t.Fatalf("guarded write after the fix: %v", err)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 3), e.q("INSERT INTO jobs (id, acct, amount) VALUES (?, ?, ?)"), 2, 1, 888); err != nil {
		t.Fatal(err)
	}
	if r := e.row(1); r.balance != 777 {
		t.Fatalf("row 1 = %+v: the trigger still writes after the fix", r)
	}
}
