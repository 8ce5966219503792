package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// SnapshotClaim is a claim made under token 60 in a transaction whose snapshot a
// write of another connection may have overtaken: the transaction reads Snapshot
// (taking its snapshot), Between runs, then Claim is sent.
type SnapshotClaim struct {
	Level    sql.IsolationLevel
	Snapshot string       // a read that takes the transaction's snapshot ("": none)
	Between  func() error // a write of another connection after the snapshot (nil: none)
	Claim    string       // the claiming statement
	Args     []any        // Claim's arguments
	Exec     bool         // send Claim with Exec instead of reading its row
}

// Run runs the claim against db and commits. A claim that reads no row is no error,
// one that reads a row is; the transaction is committed only if the claim succeeded.
// A failure to begin, to read the snapshot or to run Between fails t.
func (c SnapshotClaim) Run(t *testing.T, db *sql.DB) (claimErr, commitErr error) {
	t.Helper()
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: c.Level})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if c.Snapshot != "" {
		var n int
		if err := tx.QueryRowContext(ctx, c.Snapshot).Scan(&n); err != nil {
			t.Fatalf("snapshot %s: %v", c.Snapshot, err)
		}
	}
	if c.Between != nil {
		if err := c.Between(); err != nil {
			t.Fatalf("the other connection's write: %v", err)
		}
	}
	if c.Exec {
		_, claimErr = tx.ExecContext(ctx, c.Claim, c.Args...)
	} else {
		var v any
		switch claimErr = tx.QueryRowContext(ctx, c.Claim, c.Args...).Scan(&v); {
		case errors.Is(claimErr, sql.ErrNoRows):
			claimErr = nil
		case claimErr == nil:
			claimErr = errors.New("the claim read a row")
		}
	}
	if claimErr != nil {
		return claimErr, nil
	}
	return nil, tx.Commit()
}

// RequireClaimedAbsent wants the key a SnapshotClaim read as absent to be claimed
// under 60: its tombstone token (tomb) is 60 and insert, which creates the key, fails
// with ErrFenced under token 55.
func RequireClaimedAbsent(t *testing.T, db *sql.DB, tomb int64, insert string) {
	t.Helper()
	if tomb != 60 {
		t.Errorf("tombstone after the claim under 60: %d, want 60", tomb)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 55), insert); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("%s under 55 of the key claimed absent under 60 (committed): %v, want ErrFenced", insert, err)
	}
}
