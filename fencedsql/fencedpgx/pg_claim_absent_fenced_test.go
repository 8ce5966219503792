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

// A stale claim of an absent key through pgx (red-team rt44e F2): a key deleted under
// 70, or claimed absent under 70, claimed FOR UPDATE under 60 fails with ErrFenced (a
// *FencedError with the claim's token) through QueryRow, Query and Exec, as a claim of
// a row written under 70 does, in every query exec mode; the commit fails, the
// tombstone keeps 70, and the holder of 70 claims it again as absent.
func TestPGStaleClaimOfAbsentKeyFenced(t *testing.T) {
	claim := "SELECT id FROM accounts WHERE id = $1 FOR UPDATE"
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			e := newPGEnv(t, mode)
			std, err := sql.Open("pgx", e.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer std.Close()
			fencetest.Guard(t, e.ctx, std, postgres.Dialect, fschema.GuardSpec{Table: "accounts"})
			if _, err := e.db.Exec(tok(e.ctx, 50), "INSERT INTO accounts (id, balance) VALUES (20, 0)"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.db.Exec(tok(e.ctx, 70), "DELETE FROM accounts WHERE id = 20"); err != nil {
				t.Fatal(err)
			}
			tx, err := e.db.Begin(tok(e.ctx, 70))
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			if err := tx.QueryRow(e.ctx, claim, 21).Scan(&id); !errors.Is(err, pgx.ErrNoRows) {
				t.Fatalf("claim of 21 under 70: %v", err)
			}
			if err := tx.Commit(e.ctx); err != nil {
				t.Fatal(err)
			}
			for _, key := range []int64{20, 21} {
				for _, c := range []struct {
					name string
					run  func(tx pgx.Tx) error
				}{
					{"QueryRow", func(tx pgx.Tx) error { return tx.QueryRow(e.ctx, claim, key).Scan(&id) }},
					{"Query", func(tx pgx.Tx) error {
						rows, err := tx.Query(e.ctx, claim, key)
						if err != nil {
							return err
						}
						rows.Close()
						return rows.Err()
					}},
					{"Exec", func(tx pgx.Tx) error { _, err := tx.Exec(e.ctx, claim, key); return err }},
				} {
					tx, err := e.db.Begin(tok(e.ctx, 60))
					if err != nil {
						t.Fatal(err)
					}
					err = c.run(tx)
					var fe *fencedsql.FencedError
					if !errors.Is(err, fencedsql.ErrFenced) || !errors.As(err, &fe) || fe.Token != 60 {
						t.Fatalf("%s: claim under 60 of key %d (the holder of 70's): %v, want a *FencedError with token 60", c.name, key, err)
					}
					if err := tx.Commit(e.ctx); err == nil {
						t.Fatalf("%s: the fenced claim's transaction committed", c.name)
					}
				}
				var got int64
				if err := std.QueryRow("SELECT fence_token FROM fencedsql_tomb_accounts WHERE id = $1", key).Scan(&got); err != nil || got != 70 {
					t.Fatalf("tombstone of %d: %d (%v), want 70", key, got, err)
				}
				tx, err := e.db.Begin(tok(e.ctx, 70))
				if err != nil {
					t.Fatal(err)
				}
				if err := tx.QueryRow(e.ctx, claim, key).Scan(&id); !errors.Is(err, pgx.ErrNoRows) {
					t.Fatalf("claim of %d under 70 (equal token): %v, want no row", key, err)
				}
				if err := tx.Commit(e.ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
