package fencedpgx_test

import (
	"testing"
)

// A batch's two-statement claim reads only the rows its own claim stamped, as Query's
// does (fencetest's EarlierStampedRows through a pgx batch, red-team rt14c F2): holder
// 10 stamped row 2 before, and the claim's UPDATE moves row 1 behind it in the ORDER
// BY (a BEFORE UPDATE trigger maintaining updated_at). The batch runs in an implicit
// transaction, in which the claim's record of its rows (a transaction-local setting)
// must reach the read queued after it.
func TestBatchClaimSkipsEarlierStampedRows(t *testing.T) {
	const ddl = plainAccounts + `ALTER TABLE accounts ADD COLUMN updated_at timestamptz NOT NULL DEFAULT '2000-01-01';
		CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated_at := clock_timestamp(); RETURN NEW; END $$;
		CREATE TRIGGER touch BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION touch();
		INSERT INTO accounts (id, balance, fence_token, updated_at) VALUES (1, 5, 1, '2000-01-01'), (2, 5, 1, '2000-06-01'), (3, 5, 1, '2001-01-01');`
	ctx, raw, db := freshPG(t, ddl)
	if _, err := db.Exec(tok(ctx, 10), "UPDATE accounts SET balance = balance WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	ids, err := batchRead(tok(ctx, 10), db, "SELECT id, (SELECT 1) AS one FROM accounts WHERE balance < $1 ORDER BY updated_at LIMIT 1 FOR UPDATE", 50)
	if err != nil || len(ids) != 1 || ids[0] != 1 {
		t.Fatalf("claimed read in a batch: rows %v, err %v; want row 1, the plain read's and the row claimed", ids, err)
	}
	var v1, v3 int64
	if err := raw.QueryRow(ctx, "SELECT (SELECT version FROM accounts WHERE id = 1), (SELECT version FROM accounts WHERE id = 3)").Scan(&v1, &v3); err != nil {
		t.Fatal(err)
	}
	if v1 != 1 || v3 != 0 {
		t.Fatalf("versions after the claim: row 1 %d (want 1, claimed), row 3 %d (want 0)", v1, v3)
	}
}
