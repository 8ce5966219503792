package redteam

// The documented placeholder idiom for claims the absence recorder does not record
// (docs/design.md, claims of absent keys): create the row under the lock, then claim
// it. On MySQL/MariaDB the pool refuses INSERT IGNORE on a guarded table (it turns the
// fencing error into a warning), so the idiom is INSERT … ON DUPLICATE KEY UPDATE
// id = id (red-team rt54d F1: the documents recommended INSERT IGNORE). It inserts an
// absent key under the token, is a no-op on a present one, and the claim then holds the
// row.

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

func TestPlaceholderThenClaimMySQL(t *testing.T) {
	d := freshDB(t, mysqlBackend(), entry{})
	fenced, _ := d.open(true, nil)
	ctx := tokenCtx(context.Background(), freshToken)
	for i := 0; i < 2; i++ { // the key absent, then present
		tx, err := fenced.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO accounts (id, balance) VALUES (9, 0) ON DUPLICATE KEY UPDATE id = id"); err != nil {
			tx.Rollback() //nolint:errcheck
			t.Fatalf("placeholder (round %d) with the current token: %v", i, err)
		}
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM accounts WHERE id = 9 FOR UPDATE").Scan(&id); err != nil {
			tx.Rollback() //nolint:errcheck
			t.Fatalf("claim of the placeholder (round %d): %v", i, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var tok int64
	if err := d.raw.QueryRowContext(context.Background(), "SELECT fence_token FROM accounts WHERE id = 9").Scan(&tok); err != nil || tok != freshToken {
		t.Fatalf("placeholder row 9: fence_token %d, err %v; want %d", tok, err, freshToken)
	}
	// A stale holder's write of the claimed placeholder is fenced.
	stale := tokenCtx(context.Background(), staleToken)
	if _, err := fenced.ExecContext(stale, "UPDATE accounts SET balance = 1 WHERE id = 9"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale write of the claimed placeholder: %v, want ErrFenced", err)
	}
	// INSERT IGNORE stays refused: it would turn the fencing error into a warning.
	if _, err := fenced.ExecContext(ctx, "INSERT IGNORE INTO accounts (id, balance) VALUES (10, 0)"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("INSERT IGNORE on a guarded table: %v, want ErrUnsupported", err)
	}
}
