package fencedpgx_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	fschema "github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// The one-statement DELETE (guard installed) in every pgx query exec mode, through
// fencedpgx and through database/sql: it deletes, reports the rows, and fails with
// ErrFenced on a newer row, deleting nothing.
func TestPGDeleteOneStatementModes(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			e := newPGEnv(t, mode)
			std, err := sql.Open("pgx", e.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer std.Close()
			fencetest.Guard(t, e.ctx, std, postgres.Dialect, fschema.GuardSpec{Table: "accounts"})
			ins := "INSERT INTO accounts (id, owner, balance) VALUES ($1, $2, 0)"
			ctx := func(tok uint64) context.Context { return fencedsql.WithToken(e.ctx, tok) }
			for _, id := range []int64{1, 2, 3} {
				if _, err := e.db.Exec(ctx(5), ins, id, fmt.Sprint("o", id)); err != nil {
					t.Fatal(err)
				}
			}
			tag, err := e.db.Exec(ctx(6), "DELETE FROM accounts WHERE id IN ($1, $2)", 1, 2)
			if err != nil || tag.RowsAffected() != 2 {
				t.Fatalf("fencedpgx DELETE: %q, %v", tag.String(), err)
			}
			if _, err := e.db.Exec(ctx(9), "UPDATE accounts SET balance = 1 WHERE id = $1", 3); err != nil {
				t.Fatal(err)
			}
			if _, err := e.db.Exec(ctx(7), "DELETE FROM accounts WHERE id = $1", 3); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale fencedpgx DELETE: %v, want ErrFenced", err)
			}
			fdb, err := sql.Open("fenced-pgx", fencetest.WithParam(e.dsn, "fenced_tables=accounts"))
			if err != nil {
				t.Fatal(err)
			}
			defer fdb.Close()
			if _, err := fdb.ExecContext(ctx(8), "DELETE FROM accounts WHERE id = $1", 3); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale database/sql DELETE: %v, want ErrFenced", err)
			}
			res, err := fdb.ExecContext(ctx(10), "DELETE FROM accounts WHERE id = $1", 3)
			if err != nil {
				t.Fatalf("database/sql DELETE: %v", err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("RowsAffected = %d", n)
			}
			// The tombstones hold the deleters' tokens: re-inserts below them are fenced.
			if _, err := e.db.Exec(ctx(5), ins, 1, "o1"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("re-insert under 5 after a DELETE under 6: %v, want ErrFenced", err)
			}
			if _, err := e.db.Exec(ctx(9), ins, 3, "o3"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("re-insert under 9 after a DELETE under 10: %v, want ErrFenced", err)
			}
		})
	}
}
