package fencedsql_test

// Red-team rt28a F3: the savepoint rule (plan.Plan.TxOnly) judged at each execution of
// a prepared statement, not only when it is prepared.

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRTrt28aSQLitePreparedSavepointRunsOutsideTx (fail-open of G11's savepoint rule).
// A savepoint statement sent as text, or prepared, outside a wrapper transaction is
// refused on SQLite (TestSQLiteSavepointText): SQLite's SAVEPOINT in autocommit opens a
// transaction the wrapper does not know of. The rule is judged only when the statement
// is PREPARED (conn.route's TxOnly). A statement prepared on a *sql.Conn while its Tx
// is open survives the Tx (database/sql closes only tx.Prepare's statements), and its
// later executions outside any transaction are not judged again (passStmt.refusedInTx
// re-checks ImplicitCommit, not TxOnly): `SAVEPOINT a` runs in autocommit and leaves
// the connection inside a transaction the wrapper does not know of — the wrapper's
// own two-statement DELETE then fails ("cannot start a transaction within a
// transaction"), and a fenced UPDATE that reports success is never committed once the
// connection is closed.
//
// Right behaviour: a TxOnly statement is judged at each execution, like ImplicitCommit:
// executed on a connection without a wrapper transaction it is refused with
// ErrUnsupported, nothing sent.
func TestRTrt28aSQLitePreparedSavepointRunsOutsideTx(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path,
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token) VALUES (1, 1, 1), (2, 2, 1)`)
	db := testdb.Open(t, "fenced-sqlite", "file:"+path+"?fenced_tables=accounts")
	db.SetMaxOpenConns(1)
	ctx := fencedsql.WithToken(context.Background(), 9)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := conn.PrepareContext(ctx, "SAVEPOINT a") // inside the transaction: allowed
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// No wrapper transaction now: as text this is refused.
	if _, err := conn.ExecContext(ctx, "SAVEPOINT a"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("SAVEPOINT as text outside a transaction: %v, want ErrUnsupported", err)
	}
	_, err = st.ExecContext(ctx)
	if errors.Is(err, fencedsql.ErrUnsupported) {
		return // the right behaviour
	}
	// An acknowledged fenced autocommit write, then the wrapper's own DELETE.
	_, uerr := conn.ExecContext(ctx, `UPDATE accounts SET balance = 99 WHERE id = 1`)
	_, delErr := conn.ExecContext(ctx, `DELETE FROM accounts WHERE id = 2`)
	var seen int
	if qerr := raw.QueryRow(`SELECT balance FROM accounts WHERE id = 1`).Scan(&seen); qerr != nil {
		t.Logf("reading through another connection: %v", qerr)
	}
	t.Errorf("prepared SAVEPOINT executed outside any transaction: err = %v, want ErrUnsupported (nothing sent). "+
		"Afterwards: fenced UPDATE err = %v, yet another connection reads balance %d (want 99: the write sits in a transaction the wrapper does not know of); "+
		"the wrapper's two-statement DELETE: %v", err, uerr, seen, delErr)
}
