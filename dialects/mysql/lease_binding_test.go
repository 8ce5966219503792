package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func bindingMaria(t *testing.T) (fenced, admin *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	admin = testdb.Open(t, "mysql", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 100), (3, 100), (4, 100)`)
	fenced = testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	return fenced, admin
}

func bindingTokens(t *testing.T, admin *sql.DB) map[int64]int64 {
	t.Helper()
	rows, err := admin.Query(`SELECT id, fence_token FROM accounts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var id, tok int64
		if err := rows.Scan(&id, &tok); err != nil {
			t.Fatal(err)
		}
		out[id] = tok
	}
	return out
}

// bindingLease is a minimal Lease that is never lost; its nil pointer is what
// WithLeases takes for "no lease" (isNilLease), as a token 0 is.
type bindingLease struct{ tok uint64 }

func (l *bindingLease) Token() uint64         { return l.tok }
func (l *bindingLease) Lost() <-chan struct{} { return nil }
func (l *bindingLease) Err() error            { return nil }

// TestNoUsableTokenBindingRefusesClaim (MariaDB, red-team rt31c F1): a transaction
// begun under a nil lease, or under a lease whose token is 0, refuses a claim sent
// with a plain context (tx.QueryRow) as it refuses a guarded write: ErrNoToken,
// nothing sent (no row stamped, none locked). Before, the claim ran as an ordinary
// locking read, and after Commit an older holder's write to the row "claimed" was
// accepted.
func TestNoUsableTokenBindingRefusesClaim(t *testing.T) {
	for name, l := range map[string]fencedsql.Lease{
		"nil lease": (*bindingLease)(nil),
		"token 0":   &bindingLease{tok: 0},
	} {
		t.Run(name, func(t *testing.T) {
			db, admin := bindingMaria(t)
			ctx := fencedsql.WithLease(context.Background(), l)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			if _, err := tx.Exec(`UPDATE accounts SET balance = 1 WHERE id = 2`); !errors.Is(err, fencedsql.ErrNoToken) {
				t.Fatalf("write: %v, want ErrNoToken", err)
			}
			var bal int64
			err = tx.QueryRow(`SELECT balance FROM accounts WHERE id = ? FOR UPDATE`, 1).Scan(&bal)
			if !errors.Is(err, fencedsql.ErrNoToken) {
				t.Fatalf("claim: %v, want ErrNoToken", err)
			}
			// Nothing was sent: the row is neither stamped nor locked (NOWAIT
			// answers at once), and the transaction goes on.
			if tok := bindingTokens(t, admin)[1]; tok != 0 {
				t.Fatalf("row 1 stamped with %d", tok)
			}
			other, err := admin.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback() //nolint:errcheck
			if err := other.QueryRow(`SELECT balance FROM accounts WHERE id = 1 FOR UPDATE NOWAIT`).Scan(&bal); err != nil {
				t.Fatalf("row 1 locked by the refused claim: %v", err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatalf("Commit: %v", err)
			}
		})
	}
}
