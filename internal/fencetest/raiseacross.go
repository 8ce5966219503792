package fencetest

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// RaiseAcross runs raise (a token floor raise) while tx, which has already written
// under a token below the new floor, is still open: it gives the raise wait to
// return, commits tx, then waits for the raise. raisedFirst is whether the raise
// returned before the commit (it did not wait for the open writer); a raise that
// fails fails t.
func RaiseAcross(t *testing.T, tx *sql.Tx, wait time.Duration, raise func() error) (raisedFirst bool, commitErr error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- raise() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RaiseTokenFloor: %v", err)
		}
		raisedFirst = true
	case <-time.After(wait):
		// The raise waits for the open writer: the right behaviour.
	}
	commitErr = tx.Commit()
	if !raisedFirst {
		if err := <-done; err != nil {
			t.Fatalf("RaiseTokenFloor: %v", err)
		}
	}
	return raisedFirst, commitErr
}

// HolderEightEffect reads, through raw, what a holder of token 8 left in the table
// accounts of the floor raise tests: row 1 stamped with 8 (an UPDATE, a claim), row 7
// inserted under 8 (an INSERT), or row 1 gone (a DELETE).
func HolderEightEffect(ctx context.Context, t *testing.T, raw *sql.DB) (stamped, inserted, gone bool) {
	t.Helper()
	if err := raw.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM accounts WHERE id = 1 AND fence_token = 8),
		EXISTS (SELECT 1 FROM accounts WHERE id = 7 AND fence_token = 8), NOT EXISTS (SELECT 1 FROM accounts WHERE id = 1)`).Scan(&stamped, &inserted, &gone); err != nil {
		t.Fatal(err)
	}
	return stamped, inserted, gone
}
