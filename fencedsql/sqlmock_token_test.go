// Which token a statement carries over go-sqlmock: prepared statements, transactions bound to a token, no token.

package fencedsql_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// One prepared statement (docs/design.md, G5) serves transactions with different tokens; the token is
// a bind argument, not SQL text.
func TestSqlmockPreparedAcrossTokens(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in := sqlFor(dc.name, `UPDATE accounts SET balance = $1 WHERE id = $2`, `UPDATE accounts SET balance = ? WHERE id = ?`)
			out := map[string]string{
				"postgres": `UPDATE accounts SET balance = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`,
				"mysql":    "UPDATE accounts SET balance = ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?",
				"sqlite":   `UPDATE accounts SET balance = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`,
			}[dc.name]
			args := func(tk int64) []driver.Value {
				if dc.name == "postgres" {
					return []driver.Value{int64(100), int64(42), tk}
				}
				return []driver.Value{int64(100), tk, tk, int64(42)}
			}
			prep := mock.ExpectPrepare(out)
			mock.ExpectBegin()
			prep.ExpectExec().WithArgs(args(7)...).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectCommit()
			mock.ExpectBegin()
			prep.ExpectExec().WithArgs(args(8)...).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectCommit()

			stmt, err := db.PrepareContext(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close()
			for _, tk := range []uint64{7, 8} {
				ctx := withTok(tk)
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, 100, 42); err != nil {
					t.Fatalf("token %d: %v", tk, err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			mockMet(t, mock)
		})
	}
}

// A prepared statement outside a transaction takes the token from each call's context,
// and database/sql counts only the caller's placeholders (NumInput).
func TestSqlmockPreparedOutsideTx(t *testing.T) {
	db, mock := newMockDB(t, mysqldialect.Dialect)
	out := "INSERT INTO accounts (id, `fence_token`, `version`) VALUES (?, ?, 1)"
	prep := mock.ExpectPrepare(out)
	prep.ExpectExec().WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(1, 1))
	prep.ExpectExec().WithArgs(int64(2), int64(9)).WillReturnResult(sqlmock.NewResult(2, 1))
	stmt, err := db.Prepare(`INSERT INTO accounts (id) VALUES (?)`)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if _, err := stmt.ExecContext(withTok(7), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := stmt.ExecContext(withTok(9), 2); err != nil {
		t.Fatal(err)
	}
	if _, err := stmt.ExecContext(withTok(9), 3, 4); err == nil {
		t.Error("two arguments for one placeholder: no error")
	}
	if _, err := stmt.ExecContext(context.Background(), 5); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Errorf("no token: err = %v, want ErrNoToken", err)
	}
	mockMet(t, mock)
}

// A transaction begun with WithToken binds its token: statements inside carry it when
// their own context binds none or the same token; one whose context binds another token
// is refused with nothing sent (database/sql cannot tell a *sql.Conn's own statement from
// its Tx's), and the transaction goes on.
func TestSqlmockTxBoundToken(t *testing.T) {
	db, mock := newMockDB(t, postgres.Dialect)
	out := `UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`
	mock.ExpectBegin()
	mock.ExpectExec(out).WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectExec(out).WithArgs(int64(2), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectCommit()
	tx, err := db.BeginTx(withTok(7), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(context.Background(), `UPDATE accounts SET x = $1`, 1); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []uint64{99, 3} {
		if _, err := tx.ExecContext(withTok(tok), `UPDATE accounts SET x = $1`, 9); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("statement bound to token %d in a transaction bound to 7: %v, want ErrUnsupported", tok, err)
		}
	}
	if _, err := tx.ExecContext(withTok(7), `UPDATE accounts SET x = $1`, 2); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	mockMet(t, mock)

	// After the transaction the connection is not bound any more.
	if _, err := db.ExecContext(context.Background(), `UPDATE accounts SET x = $1`, 3); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Errorf("after commit: err = %v, want ErrNoToken", err)
	}
	mockMet(t, mock)
}

func TestSqlmockNoToken(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in := sqlFor(dc.name, `UPDATE accounts SET x = $1`, `UPDATE accounts SET x = ?`)
			for name, ctx := range map[string]context.Context{
				"no token":  context.Background(),
				"token 0":   withTok(0),
				"nil lease": fencedsql.WithLease(context.Background(), nil),
				"too large": withTok(1 << 63),
			} {
				_, err := db.ExecContext(ctx, in, 1)
				if !errors.Is(err, fencedsql.ErrNoToken) {
					t.Errorf("%s: err = %v, want ErrNoToken", name, err)
				}
				var nt *fencedsql.NoTokenError
				if !errors.As(err, &nt) || nt.Table != "accounts" {
					t.Errorf("%s: err = %#v, want *NoTokenError for accounts", name, err)
				}
			}
			if _, err := db.QueryContext(context.Background(), in+" RETURNING id", 1); !errors.Is(err, fencedsql.ErrNoToken) {
				t.Errorf("query: err = %v, want ErrNoToken", err)
			}
			del := sqlFor(dc.name, `DELETE FROM accounts WHERE id = $1`, `DELETE FROM accounts WHERE id = ?`)
			if _, err := db.ExecContext(context.Background(), del, 1); !errors.Is(err, fencedsql.ErrNoToken) {
				t.Errorf("delete: err = %v, want ErrNoToken", err)
			}
			mockMet(t, mock) // nothing was sent

			// In a transaction without a token as well.
			mock.ExpectBegin()
			mock.ExpectRollback()
			tx, err := db.BeginTx(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(in, 1); !errors.Is(err, fencedsql.ErrNoToken) {
				t.Errorf("in tx: err = %v, want ErrNoToken", err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}
