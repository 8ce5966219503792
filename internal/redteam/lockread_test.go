package redteam

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Locking reads (issue 22 item 3). The hazard: a new holder reads rows under a lock but
// its read does not claim them, so an older holder's late write still lands. Each
// refused shape is first shown to let that write land (the read on the raw driver, then
// a fenced UPDATE with a token between the seed's and the reader's), then shown refused
// through the wrapper with any token, nothing changed. Each claimed shape goes through
// the catalogue as a Claim (stale token fenced, fresh token stamps the rows it read
// with the raw driver's result), and the late write after it is fenced.

const lateToken = 60 // above the seed (50), below the reader's (freshToken)

const lateWrite = "UPDATE accounts SET balance = balance + 1 WHERE id = 1"

// lockShape is one locking read: its steps run in one transaction.
type lockShape struct {
	name  string
	steps []step
}

// afterRead runs the shape in a transaction on db with the reader's token, then the
// late write with lateToken through a fenced pool; it returns the read's error and the
// late write's.
func afterRead(t *testing.T, d *dbs, fencedRead bool, sh lockShape) (readErr, writeErr error) {
	t.Helper()
	db, _ := d.open(fencedRead, nil)
	r := run(tokenCtx(d.ctx, freshToken), db, entry{steps: sh.steps, tx: true})
	w, _ := d.open(true, nil)
	_, writeErr = w.ExecContext(tokenCtx(d.ctx, lateToken), lateWrite)
	return r.err, writeErr
}

func refusedLockReads(t *testing.T, b backend, shapes []lockShape) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			// 1. Raw read: legal, and the older holder's write lands after it.
			d := freshDB(t, b, entry{})
			before := d.snap()
			readErr, writeErr := afterRead(t, d, false, sh)
			if readErr != nil || writeErr != nil {
				t.Fatalf("ENTRY WRONG on the raw %s driver: read %v, late write %v", b.name, readErr, writeErr)
			}
			if guardedDiff(before, d.snap()) == "" {
				t.Fatalf("ENTRY WRONG: the late write changed nothing")
			}
			// 2. Through the wrapper: refused with a stale and a fresh token, nothing changed.
			d = freshDB(t, b, entry{})
			before = d.snap()
			for _, tok := range []uint64{staleToken, freshToken} {
				db, rec := d.open(true, nil)
				rec.start()
				r := run(tokenCtx(d.ctx, tok), db, entry{steps: sh.steps, tx: true})
				sent := rec.stop()
				if !errors.Is(r.err, fencedsql.ErrUnsupported) {
					t.Errorf("BYPASS? token %d on %s: %v, want ErrUnsupported\n  sent: %q", tok, b.name, r.err, sent)
				}
				if df := diff(before, d.snap()); df != "" {
					t.Errorf("token %d on %s: refused but changed data:\n%s", tok, b.name, indent(df))
				}
			}
		})
	}
}

// claimedLockReads: each shape is a Claim in the catalogue, and a late write after it
// is fenced.
func claimedLockReads(t *testing.T, b backend, shapes []lockShape) {
	var es []entry
	for _, sh := range shapes {
		es = append(es, entry{class: "lockread_claim", name: sh.name, steps: sh.steps, want: Claim})
	}
	runCatalogue(t, b, es)
	for _, sh := range shapes {
		t.Run("late_write_after/"+sh.name, func(t *testing.T) {
			t.Parallel()
			d := freshDB(t, b, entry{})
			readErr, writeErr := afterRead(t, d, true, sh)
			if readErr != nil {
				t.Fatalf("claimed read on %s: %v", b.name, readErr)
			}
			if !errors.Is(writeErr, fencedsql.ErrFenced) {
				t.Errorf("BYPASS: after the claimed read on %s the older holder's write returned %v, want ErrFenced", b.name, writeErr)
			}
		})
	}
}

func TestLockReadPostgres(t *testing.T) {
	b := postgresBackend()
	claimedLockReads(t, b, []lockShape{
		{"parenthesised", []step{q("(SELECT id, balance FROM accounts WHERE id = 1 FOR UPDATE)")}},
		{"double_parenthesised", []step{q("((SELECT id, balance FROM accounts WHERE id <= 2 ORDER BY id FOR UPDATE))")}},
		{"with_list", []step{q("WITH lim AS (SELECT 1 AS one) SELECT id, balance FROM accounts WHERE id = (SELECT one FROM lim) FOR UPDATE")}},
		{"with_list_parenthesised", []step{q("(WITH lim AS (SELECT 2 AS two) SELECT id FROM accounts WHERE id <= (SELECT two FROM lim) FOR NO KEY UPDATE)")}},
		{"for_key_share", []step{q("SELECT id FROM accounts WHERE id = 1 FOR KEY SHARE")}},
		{"for_share_limit", []step{q("SELECT id FROM accounts ORDER BY id LIMIT 1 FOR SHARE")}},
	})
	refusedLockReads(t, b, []lockShape{
		{"cursor", []step{x("DECLARE c CURSOR FOR SELECT id, balance FROM accounts WHERE id = 1 FOR UPDATE"), q("FETCH ALL FROM c")}},
		{"locking_subquery_in_from", []step{q("SELECT * FROM (SELECT id, balance FROM accounts WHERE id = 1 FOR UPDATE) s")}},
		{"locking_scalar_subquery", []step{q("SELECT (SELECT balance FROM accounts WHERE id = 1 FOR UPDATE)")}},
		{"locking_query_in_with", []step{q("WITH x AS (SELECT id FROM accounts WHERE id = 1 FOR UPDATE) SELECT * FROM x")}},
		{"locking_read_in_insert", []step{x("INSERT INTO ledger (id, account_id) SELECT 10, id FROM accounts WHERE id = 1 FOR UPDATE")}},
		{"with_list_shadowing_the_table", []step{q("WITH accounts AS (SELECT * FROM ledger) SELECT id FROM accounts WHERE id = 1 FOR UPDATE")}},
	})
}

func TestLockReadMariaDB(t *testing.T) {
	b := mysqlBackend()
	claimedLockReads(t, b, []lockShape{
		{"parenthesised", []step{q("(SELECT id, balance FROM accounts WHERE id = 1 FOR UPDATE)")}},
		{"parenthesised_share_mode", []step{q("(SELECT id FROM accounts WHERE id <= 2 LOCK IN SHARE MODE)")}},
		{"ordered_limit_parenthesised", []step{q("(SELECT id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE)")}},
	})
	refusedLockReads(t, b, []lockShape{
		{"into_variable", []step{x("SELECT balance INTO @b FROM accounts WHERE id = 1 FOR UPDATE")}},
		{"for_update_into_variable", []step{x("SELECT balance FROM accounts WHERE id = 1 FOR UPDATE INTO @b")}},
		{"into_variable_share_mode", []step{x("SELECT balance INTO @b FROM accounts WHERE id = 1 LOCK IN SHARE MODE")}},
		{"locking_query_in_with", []step{q("WITH x AS (SELECT id FROM accounts WHERE id = 1 FOR UPDATE) SELECT * FROM x")}},
		{"with_list_then_locking_read", []step{q("WITH lim AS (SELECT 1 AS one) SELECT id FROM accounts WHERE id = (SELECT one FROM lim) FOR UPDATE")}},
		{"locking_subquery_in_from", []step{q("SELECT * FROM (SELECT id, balance FROM accounts WHERE id = 1 FOR UPDATE) s")}},
		{"set_variable_locking_subquery", []step{x("SET @b = (SELECT balance FROM accounts WHERE id = 1 FOR UPDATE)")}},
		{"locking_read_in_insert", []step{x("INSERT INTO ledger (id, account_id) SELECT 10, id FROM accounts WHERE id = 1 FOR UPDATE")}},
	})
}
