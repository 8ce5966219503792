package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestListedUnguardedTableRefusedWhereFloor (red-team rt54c F1, G16 floor coverage): in
// a database whose guards read a token floor, a listed table with its fencing columns
// but no guard (its installation lost with an asynchronous failover's tail) cannot
// honour the floor: the pool refuses its writes (*SchemaError, ErrSchema, "not guarded
// on this server") while the guarded table's writes go on. Without a floor (no guard
// in the database) wrapper-only fencing stays allowed.
func TestListedUnguardedTableRefusedWhereFloor(t *testing.T) {
	const items = "CREATE TABLE items (id BIGINT PRIMARY KEY, note TEXT NOT NULL DEFAULT '', fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok := fencedsql.WithToken(ctx, 7)
	t.Run("floor", func(t *testing.T) {
		dsn := testdb.Postgres(t)
		raw := testdb.Open(t, "pgx", dsn, items,
			"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
			"INSERT INTO items (id) VALUES (1)", "INSERT INTO accounts (id) VALUES (1)")
		testdb.Exec(t, raw, postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
		fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts,items"))
		if _, err := fenced.ExecContext(tok, "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
			t.Fatalf("guarded table: %v", err)
		}
		for _, q := range []string{"UPDATE items SET note = 'x' WHERE id = 1", "INSERT INTO items (id) VALUES (2)"} {
			_, err := fenced.ExecContext(tok, q)
			var se *fencedsql.SchemaError
			if !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "not guarded on this server") || !strings.Contains(err.Error(), "-apply") {
				t.Errorf("%s: %v; want a *SchemaError: not guarded on this server although the database has a token floor", q, err)
			}
		}
	})
	t.Run("no floor", func(t *testing.T) {
		dsn := testdb.Postgres(t)
		testdb.Open(t, "pgx", dsn, items, "INSERT INTO items (id) VALUES (1)")
		fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=items"))
		if _, err := fenced.ExecContext(tok, "UPDATE items SET note = 'x' WHERE id = 1"); err != nil {
			t.Fatalf("wrapper-only fencing without a floor: %v", err)
		}
	})
}
