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

// A claim of an absent key through pgx (red-team rt42e F1; fencedsql's G10): QueryRow
// that finds no row, rows closed unread, and Exec each record the key's absence at the
// claim's token, so an older holder's INSERT of the key fails with ErrFenced and the
// claimer's own succeeds, in every query exec mode.
func TestPGClaimOfAbsentKey(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			e := newPGEnv(t, mode)
			std, err := sql.Open("pgx", e.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer std.Close()
			fencetest.Guard(t, e.ctx, std, postgres.Dialect, fschema.GuardSpec{Table: "accounts"})
			claim := "SELECT id FROM accounts WHERE id = $1 FOR UPDATE"
			for i, c := range []struct {
				name string
				run  func(tx pgx.Tx, id int64) error
			}{
				{"QueryRow", func(tx pgx.Tx, id int64) error {
					var got int64
					if err := tx.QueryRow(e.ctx, claim, id).Scan(&got); !errors.Is(err, pgx.ErrNoRows) {
						return err
					}
					return nil
				}},
				{"Query closed unread", func(tx pgx.Tx, id int64) error {
					rows, err := tx.Query(e.ctx, claim, id)
					if err != nil {
						return err
					}
					rows.Close()
					return rows.Err()
				}},
				{"Exec", func(tx pgx.Tx, id int64) error {
					_, err := tx.Exec(e.ctx, claim, id)
					return err
				}},
			} {
				id := int64(7 + i)
				tx, err := e.db.Begin(tok(e.ctx, 60))
				if err != nil {
					t.Fatal(err)
				}
				if err := c.run(tx, id); err != nil {
					t.Fatalf("%s: claim: %v", c.name, err)
				}
				if err := tx.Commit(e.ctx); err != nil {
					t.Fatal(err)
				}
				if _, err := e.db.Exec(tok(e.ctx, 40), "INSERT INTO accounts (id, balance) VALUES ($1, 1)", id); !errors.Is(err, fencedsql.ErrFenced) {
					t.Fatalf("%s: INSERT under 40 of a key claimed absent under 60: %v, want ErrFenced", c.name, err)
				}
				if _, err := e.db.Exec(tok(e.ctx, 60), "INSERT INTO accounts (id, balance) VALUES ($1, 1)", id); err != nil {
					t.Fatalf("%s: the claimer's INSERT: %v", c.name, err)
				}
			}
		})
	}
}
