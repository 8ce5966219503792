// Two leases bound together while one lock client is stalled (from red-team pass
// rt53e, kept as a permanent check).
//
//	go test -count=1 -run TestTwoLeasesOneBackendStalled ./fencedsql/

package fencedsql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
)

// WithLeases(A, B), with A's client stalled (memlock Pause: its requests held, as a
// paused network) after B's grant: BeginTx must confirm A at the service after B's
// grant (leaseproof.go) and cannot, so it fails within the caller's 300 ms deadline
// with ErrLeaseLost, nothing written — A's lease is not lost (its local deadline is 2 s
// away), only unconfirmed. Healed, the same binding begins and commits, with B's token
// on both rows. (A stalled past its local deadline, the lease lost:
// TestWithLeasesOneLost.)
func TestTwoLeasesOneBackendStalled(t *testing.T) {
	raw, db := confirmDB(t)
	svc, la, lb := twoLeasesOneService(t, 2*time.Second)
	both := fencedsql.WithLeases(context.Background(), la, lb)
	svc.Pause("A1")
	ctx, cancel := context.WithTimeout(both, 300*time.Millisecond)
	start := time.Now()
	tx, err := db.BeginTx(ctx, nil)
	took := time.Since(start)
	cancel()
	if err == nil {
		tx.Rollback()
		t.Fatal("BeginTx under WithLeases(A, B) with A's client stalled succeeded: A was not confirmed after B's grant")
	}
	if !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Errorf("BeginTx with A unconfirmable: %v, want ErrLeaseLost", err)
	}
	if took > time.Second {
		t.Errorf("BeginTx with A's client stalled took %v with a 300ms deadline", took)
	}
	if la.Err() != nil {
		t.Fatalf("A's lease lost during a 300ms stall of a 2s lease: %v", la.Err())
	}
	if bal, _ := row1(t, raw); bal != 100 {
		t.Fatalf("row 1 balance %d, want 100: something was written", bal)
	}
	svc.Resume("A1")
	tx, err = db.BeginTx(both, nil)
	if err != nil {
		t.Fatalf("BeginTx once healed: %v", err)
	}
	defer tx.Rollback()
	for _, id := range []int{1, 2} {
		if _, err := tx.ExecContext(both, `UPDATE accounts SET balance = balance + 1 WHERE id = ?`, id); err != nil {
			t.Fatalf("update %d: %v", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit once healed: %v", err)
	}
	var b1, b2, t1, t2 int64
	if err := raw.QueryRow(`SELECT a.balance, a.fence_token, b.balance, b.fence_token FROM accounts a, accounts b WHERE a.id = 1 AND b.id = 2`).Scan(&b1, &t1, &b2, &t2); err != nil {
		t.Fatal(err)
	}
	if b1 != 101 || b2 != 201 || uint64(t1) != lb.Token() || uint64(t2) != lb.Token() {
		t.Errorf("rows: balances %d, %d, tokens %d, %d; want 101, 201 with B's token %d on both", b1, b2, t1, t2, lb.Token())
	}
}
