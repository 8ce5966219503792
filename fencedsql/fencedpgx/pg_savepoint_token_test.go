package fencedpgx_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestSavepointTokenOverLeaseRefused (red-team rt33a F1, fail-open before): in a
// transaction bound to lease b (token 10), a savepoint begun under
// WithToken(WithLease(ctx, b), 40) — a bare token laid over the transaction's own
// lease — is refused with ErrUnsupported, nothing sent, as tx.Begin(WithToken(ctx, 40))
// is. Before, it raised the transaction to 40, a token no lease held was granted. The
// transaction goes on under 10 and commits.
func TestSavepointTokenOverLeaseRefused(t *testing.T) {
	ctx := context.Background()
	_, raw, db := oneConnDB(t, ctx, bindingSeed)
	b := bindingLease(10)
	tx, err := db.Begin(fencedsql.WithLease(ctx, b))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if sp, err := tx.Begin(fencedsql.WithToken(fencedsql.WithLease(ctx, b), 40)); !errors.Is(err, fencedsql.ErrUnsupported) {
		if sp != nil {
			_ = sp.Rollback(ctx)
		}
		t.Fatalf("savepoint under WithToken(WithLease(b), 40): %v, want ErrUnsupported", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE accounts SET balance = 1 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tok := bindingRowToken(t, ctx, raw, 2); tok != 10 {
		t.Fatalf("row 2 stamped %d, want 10 (the transaction's lease)", tok)
	}
}
