package fencedpgx_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	fschema "github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestPGDeleteWithoutReturningSentAsQuery (red-team rt55a F1): a fenced DELETE without
// RETURNING sent with Query or QueryRow — outside a transaction, where the wrapper runs
// it in a transaction of its own and it is committed when the call returns, and in the
// caller's — answers as pgx answers it: rows with no field and no row, no error, the
// "DELETE n" command tag, and pgx.ErrNoRows from QueryRow's Scan (it was an untyped
// "unexpected rows" error after the DELETE had committed). A stale token still gets
// ErrFenced and deletes nothing. In every query exec mode, with and without the guard.
func TestPGDeleteWithoutReturningSentAsQuery(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		for _, mode := range modes {
			name := mode
			if guarded {
				name += "/guarded"
			}
			t.Run(name, func(t *testing.T) {
				e := newPGEnv(t, mode)
				if guarded {
					std, err := sql.Open("pgx", e.dsn)
					if err != nil {
						t.Fatal(err)
					}
					defer std.Close()
					fencetest.Guard(t, e.ctx, std, postgres.Dialect, fschema.GuardSpec{Table: "accounts"})
				}
				for _, id := range []int64{1, 2, 3, 4} {
					if _, err := e.db.Exec(tok(e.ctx, 5), "INSERT INTO accounts (id, owner, balance) VALUES ($1, $2, 0)", id, "o"+string(rune('0'+id))); err != nil {
						t.Fatal(err)
					}
				}
				present := func(id int64) bool {
					var n int
					if err := e.raw.QueryRow(e.ctx, "SELECT count(*) FROM accounts WHERE id = $1", id).Scan(&n); err != nil {
						t.Fatal(err)
					}
					return n == 1
				}
				drain := func(rows pgx.Rows, err error) (string, error) {
					if err != nil {
						return "", err
					}
					for rows.Next() {
						t.Error("a row from a DELETE without RETURNING")
					}
					rows.Close()
					return rows.CommandTag().String(), rows.Err()
				}
				if tag, err := drain(e.db.Query(tok(e.ctx, 6), "DELETE FROM accounts WHERE id = $1", 1)); err != nil || tag != "DELETE 1" || present(1) {
					t.Errorf("Pool.Query(DELETE): tag %q, %v, row present %v; want DELETE 1, no error, deleted", tag, err, present(1))
				}
				if tag, err := drain(e.db.Query(tok(e.ctx, 6), "DELETE FROM accounts WHERE id = $1", 99)); err != nil || tag != "DELETE 0" {
					t.Errorf("Pool.Query(DELETE of no row): tag %q, %v; want DELETE 0, no error", tag, err)
				}
				var x int
				if err := e.db.QueryRow(tok(e.ctx, 6), "DELETE FROM accounts WHERE id = $1", 2).Scan(&x); !errors.Is(err, pgx.ErrNoRows) || present(2) {
					t.Errorf("Pool.QueryRow(DELETE).Scan: %v, row present %v; want pgx.ErrNoRows, deleted", err, present(2))
				}
				tx, err := e.db.Begin(tok(e.ctx, 6))
				if err != nil {
					t.Fatal(err)
				}
				if tag, err := drain(tx.Query(tok(e.ctx, 6), "DELETE FROM accounts WHERE id = $1", 3)); err != nil || tag != "DELETE 1" {
					t.Errorf("Tx.Query(DELETE): tag %q, %v; want DELETE 1, no error", tag, err)
				}
				if err := tx.Commit(e.ctx); err != nil || present(3) {
					t.Errorf("commit: %v, row present %v", err, present(3))
				}
				if _, err := e.db.Exec(tok(e.ctx, 9), "UPDATE accounts SET balance = 1 WHERE id = $1", 4); err != nil {
					t.Fatal(err)
				}
				if _, err := drain(e.db.Query(tok(e.ctx, 7), "DELETE FROM accounts WHERE id = $1", 4)); !errors.Is(err, fencedsql.ErrFenced) || !present(4) {
					t.Errorf("stale Pool.Query(DELETE): %v, row present %v; want ErrFenced, kept", err, present(4))
				}
			})
		}
	}
}
