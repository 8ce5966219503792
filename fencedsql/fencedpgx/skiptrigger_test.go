package fencedpgx_test

// Claims over rows a BEFORE UPDATE trigger skips, through fencedpgx (red-team rt35a F2).

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestSkipTriggerBatchClaimDoesNotDropRows (wrong rows returned, unclaimed lock):
// a fencedpgx batch's claim selected by its WHERE alone over a table whose BEFORE
// UPDATE trigger skips "frozen" rows (RETURN NULL; it names no fencing column, so it
// is no side door) returns only the rows its UPDATE stamped: row 2, not rows 1 and 2
// as the plain locking read does, with no error (the batch's one-statement claim
// stamps and returns what its UPDATE reached; nothing compares it with the rows the
// locking subquery locked). Same code as postgres: TestSkipTriggerClaimDoesNotDropRows.
// Right behaviour:
// the claim returns, stamps and holds exactly the rows the plain locking read returns
// (1 and 2), or fails whole with a typed error (ErrClaimConflict, as the located form
// does, or ErrUnsupported).
// Now: skipDoor makes the trigger a door, so the lazy check refuses the table with
// ErrSchema before anything is sent.
func TestSkipTriggerBatchClaimDoesNotDropRows(t *testing.T) {
	ctx, raw, db := freshPG(t, plainAccounts+`
		CREATE FUNCTION frozen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF OLD.balance = 13 THEN RETURN NULL; END IF; RETURN NEW; END $$;
		CREATE TRIGGER frozen BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION frozen();
		INSERT INTO accounts VALUES (1, 13, 0, 0), (2, 20, 0, 0);`)
	const read = "SELECT id FROM accounts WHERE id <= $1 FOR UPDATE"
	rtx, err := raw.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := batchRead(ctx, rtx, read, 2)
	_ = rtx.Rollback(ctx)
	if err != nil || len(want) != 2 {
		t.Fatalf("plain locking read: %v, %v", want, err)
	}
	got, err := batchRead(tok(ctx, 7), db, read, 2)
	if err != nil {
		if errors.Is(err, fencedsql.ErrClaimConflict) || errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrSchema) {
			return
		}
		t.Fatalf("claim failed untyped: %v", err)
	}
	if len(got) != len(want) {
		t.Errorf("batch claim returned %v with no error; the plain locking read returns %v", got, want)
	}
}
