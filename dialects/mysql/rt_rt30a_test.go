package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRTrt30aCallRecreatesWrapperSavepoint (fail-open, needs a procedure that knows the
// wrapper's naming). The savepoint that marks the transaction around a dynamic statement
// (markDynamic) is named fencedsql_dyn_<n>, n counting the connection's dynamic
// statements from 1: predictable. A procedure that runs COMMIT; START TRANSACTION;
// SAVEPOINT fencedsql_dyn_1 (or loops over a few numbers) leaves a savepoint of that
// name in the new transaction, so the wrapper's RELEASE succeeds, @@in_transaction is 1,
// and the wrapper believes its transaction intact: the fenced UPDATE made before the CALL
// is committed, yet tx.Rollback answers nil (the caller believes nothing was written).
//
// Right behaviour: the marker cannot be recreated by the statement it judges — a name
// with a per-connection random part (crypto/rand), so that a procedure cannot name it;
// the CALL fails with outcome Unknown and Rollback reports Unknown.
func TestRTrt30aCallRecreatesWrapperSavepoint(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 10, 10, 1)",
		"CREATE PROCEDURE rt30a_reopen() BEGIN COMMIT; START TRANSACTION; SAVEPOINT fencedsql_dyn_1; SAVEPOINT fencedsql_dyn_2; SAVEPOINT fencedsql_dyn_3; END")
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=dynamic_sql")
	fenced.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	tctx := fencedsql.WithToken(ctx, 20)
	tx, err := fenced.BeginTx(tctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(tctx, "UPDATE accounts SET balance = 99 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	_, cerr := tx.ExecContext(tctx, "CALL rt30a_reopen()")
	rerr := tx.Rollback()
	var bal int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil {
		t.Fatal(err)
	}
	if bal == 99 && cerr == nil && rerr == nil {
		t.Errorf("the CALL that committed and re-created the wrapper's savepoint by name passed (err nil), Rollback answered nil, yet balance 99 is committed: want the CALL refused with outcome Unknown")
	}
}
