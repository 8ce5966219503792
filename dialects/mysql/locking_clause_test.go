package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func lockingClauseMaria(t *testing.T) (fenced, admin *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	admin = testdb.Open(t, "mysql", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 100), (3, 100), (4, 100)`)
	fenced = testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	return fenced, admin
}

// TestUnknownLockingClauseRefusedBeforeSending (MariaDB; red-team rt31c F6): a locking clause
// MariaDB does not take (MySQL 8's FOR SHARE and FOR UPDATE OF, PostgreSQL's FOR NO KEY
// UPDATE, text after FOR UPDATE) sent with a token in a transaction was planned as a
// claim: its fencing UPDATE stamped the row, then the read failed with the server's
// error 1064 and the transaction was lost. It is refused with ErrUnsupported before
// anything is sent: nothing stamped, the transaction commits its earlier write.
func TestUnknownLockingClauseRefusedBeforeSending(t *testing.T) {
	for _, q := range []string{
		`SELECT balance FROM accounts WHERE id = 1 FOR SHARE`,
		`SELECT balance FROM accounts WHERE id = 1 FOR UPDATE OF accounts`,
		`SELECT balance FROM accounts WHERE id = 1 FOR NO KEY UPDATE`,
		`SELECT balance FROM accounts WHERE id = 1 FOR UPDATE garbage`,
	} {
		t.Run(q, func(t *testing.T) {
			db, admin := lockingClauseMaria(t)
			ctx := fencedsql.WithToken(context.Background(), 10)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = 50 WHERE id = 2`); err != nil {
				t.Fatal(err)
			}
			_, qerr := tx.QueryContext(ctx, q)
			var tok int64
			if err := tx.QueryRowContext(ctx, `SELECT fence_token FROM accounts WHERE id = 1`).Scan(&tok); err != nil {
				t.Fatal(err)
			}
			cerr := tx.Commit()
			var bal2 int64
			if err := admin.QueryRow(`SELECT balance FROM accounts WHERE id = 2`).Scan(&bal2); err != nil {
				t.Fatal(err)
			}
			if errors.Is(qerr, fencedsql.ErrUnsupported) && tok == 0 && cerr == nil && bal2 == 50 {
				return
			}
			t.Errorf("err = %.160v (ErrUnsupported: %v); row 1 token inside the transaction %d; Commit = %.120v; earlier write kept: %v; "+
				"want ErrUnsupported, nothing stamped and the transaction committing its earlier write",
				qerr, errors.Is(qerr, fencedsql.ErrUnsupported), tok, cerr, bal2 == 50)
		})
	}
}
