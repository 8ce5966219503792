package fencedpgx_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Prepare of a guarded write on a table without its fencing columns fails with the
// *SchemaError Exec returns, before the rewrite is sent (red-team rt48g F1).
func TestPrepareUnfitTableSchemaError(t *testing.T) {
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0)`)
	ctx := context.Background()
	pc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(ctx)
	c, err := fencedpgx.NewConn(pc, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	const q = `UPDATE accounts SET balance = 1 WHERE id = 1`
	if _, err := c.Exec(fencedsql.WithToken(ctx, 7), q); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("Exec: %v; want ErrSchema", err)
	}
	_, err = c.Prepare(ctx, "upd", q)
	var se *fencedsql.SchemaError
	if !errors.As(err, &se) || se.Fix == "" {
		t.Errorf("Prepare: %v; want the *SchemaError of Exec", err)
	}
}
