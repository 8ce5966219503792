package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestAbsentClaimAgainAfterSavepoints (a red-team rt48h probe that held): claims of
// absent keys around savepoints — a claim rolled back to its savepoint and made again,
// one in a released savepoint, one after an INSERT of the key rolled back — all stand
// after Commit: an older holder's INSERT of each is ErrFenced (the wrapper keeps no
// per-transaction "already claimed" state that would skip a record).
func TestAbsentClaimAgainAfterSavepoints(t *testing.T) {
	_, db := absentAcc(t)
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	mustExec := func(q string, args ...any) {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	claim := func(k int) {
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", k).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("claim %d: %v", k, err)
		}
	}
	mustExec("SAVEPOINT s1")
	claim(8)
	mustExec("ROLLBACK TO SAVEPOINT s1")
	claim(8) // claimed again after the rollback
	mustExec("SAVEPOINT s2")
	claim(9)
	mustExec("RELEASE SAVEPOINT s2")
	mustExec("SAVEPOINT s3")
	mustExec("INSERT INTO acc (id) VALUES (10)")
	mustExec("ROLLBACK TO SAVEPOINT s3")
	claim(10)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{8, 9, 10} {
		if err := insertAs(db, 40, "INSERT INTO acc (id) VALUES ($1)", k); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("stale INSERT of key %d claimed (after savepoints) under 60: %v, want ErrFenced", k, err)
		}
	}
}

// TestAbsentRecordAfterLeaseLost (a red-team rt48h probe that held): several real
// leases (memlock). A claim outside a transaction under WithLeases is refused; in a
// transaction begun under the first lease, a claim carrying both, the second lost
// between the claim's send and its rows' Close (when PostgreSQL's one-statement claim
// records the absence): Commit fails and no tombstone is left.
func TestAbsentRecordAfterLeaseLost(t *testing.T) {
	raw, db := absentAcc(t)
	ctx := context.Background()
	svc := memlock.New()
	const ttl = 300 * time.Millisecond
	c1 := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithOwner("absent-lease-A1"))
	c2 := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithOwner("absent-lease-A2"))
	t.Cleanup(func() { svc.Resume("absent-lease-A1"); _ = c1.Close(ctx); _ = c2.Close(ctx) })
	l1, err := c1.Acquire(ctx, "absent-lease:1")
	if err != nil {
		t.Fatal(err)
	}
	l2, err := c2.Acquire(ctx, "absent-lease:2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		leases []fencedsql.Lease
		lose   *lockclient.Lease
		owner  string
	}{
		{"two leases, the larger lost", []fencedsql.Lease{l1, l2}, l2, "absent-lease-A2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lctx := fencedsql.WithLeases(ctx, tc.leases...)
			rows, err := db.QueryContext(lctx, "SELECT id FROM acc WHERE id = 8 FOR UPDATE")
			if err == nil {
				rows.Close()
				t.Fatalf("claim outside a transaction accepted")
			}
			// In a transaction begun under the first lease, the claim's statement
			// carrying the second (joining).
			tx, err := db.BeginTx(fencedsql.WithLease(ctx, tc.leases[0]), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			rows, err = tx.QueryContext(lctx, "SELECT id FROM acc WHERE id = 8 FOR UPDATE")
			if err != nil {
				t.Fatal(err)
			}
			svc.Pause(tc.owner)
			select {
			case <-tc.lose.Lost():
			case <-time.After(10 * time.Second):
				t.Fatal("lease not lost")
			}
			for rows.Next() {
			}
			cerr := rows.Close()
			var tomb int64
			raw.QueryRow("SELECT fence_token FROM fencedsql_tomb_acc WHERE id = 8").Scan(&tomb) //nolint:errcheck
			t.Logf("rows.Close after the lease was lost: %v (lost: %v); tombstone of key 8: %d", cerr, errors.Is(cerr, lockclient.ErrLeaseLost), tomb)
			comErr := tx.Commit()
			raw.QueryRow("SELECT fence_token FROM fencedsql_tomb_acc WHERE id = 8").Scan(&tomb) //nolint:errcheck
			t.Logf("commit: %v; tombstone after: %d", comErr, tomb)
			if tomb != 0 || comErr == nil {
				t.Fatalf("the claim's record was written (tombstone %d) after lease %d was lost", tomb, tc.lose.Token())
			}
		})
	}
}
