// A read-only database default is ErrNotPrimary (red-team rt52a F4).

package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestReadOnlyDatabaseDefault (red-team rt52a F4): a database default
// default_transaction_read_only = on — how a primary is made read-only for a
// switch-over — made a fenced pgx pool's guarded writes fail with the raw SQLSTATE
// 25006. The session check now reads the same writable-primary test as
// RaiseTokenFloor and MaxToken (WritablePrimaryQuery) once per connection and refuses
// with a *SessionError (NotPrimary: errors.Is ErrNotPrimary) before anything is sent.
func TestReadOnlyDatabaseDefault(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	setup := rawWith(t, dsn,
		"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"INSERT INTO acc (id) VALUES (1)")
	checkAcc(t, setup, dsn)
	testdb.Exec(t, setup, "ALTER DATABASE "+dbDefaultName(t, dsn)+" SET default_transaction_read_only = on")
	setup.Close()
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET balance = 10 WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrNotPrimary) {
		t.Errorf("guarded UPDATE on a read-only database: %v, want ErrNotPrimary", err)
	}
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 60), nil)
	if err == nil {
		var id int64
		err = tx.QueryRowContext(fencedsql.WithToken(ctx, 60), "SELECT id FROM acc WHERE id = 7 FOR UPDATE").Scan(&id)
		tx.Rollback() //nolint:errcheck
	}
	if !errors.Is(err, fencedsql.ErrNotPrimary) {
		t.Errorf("claim on a read-only database: %v, want ErrNotPrimary", err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), "DELETE FROM acc WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrNotPrimary) {
		t.Errorf("guarded DELETE on a read-only database: %v, want ErrNotPrimary", err)
	}
}
