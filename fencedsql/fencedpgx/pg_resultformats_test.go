package fencedpgx_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestPGResultFormatsPerCall (red-team rt55d F1): pgx's per-call result formats go with
// every statement fencedpgx sends for the call — its first-use and table checks, a
// DELETE's fencing step, a claim's stamp — so QueryResultFormats with a code per column
// cannot fit them: it is refused with ErrUnsupported before anything is sent (it was
// the server's 08P01 or pgx's argument-count error, untyped). One code for every
// column, and QueryResultFormatsByOID, fit any statement and run: on a cold pool
// (first use) and a warm one, for an UPDATE, INSERT and DELETE … RETURNING and a claim.
func TestPGResultFormatsPerCall(t *testing.T) {
	cases := []struct {
		name, sql string
		tx        bool
	}{
		{"update returning", "UPDATE accounts SET balance = balance + 1 WHERE id = $1 RETURNING id, balance", false},
		{"claim", "SELECT id, balance FROM accounts WHERE id = $1 FOR UPDATE", true},
		{"delete returning", "DELETE FROM accounts WHERE id = $1 RETURNING id, balance", true},
		{"insert returning", "INSERT INTO accounts (id, owner, balance) VALUES ($1::bigint + 10, 'n' || $1::bigint::text, 0) RETURNING id, balance", false},
	}
	opts := []struct {
		name    string
		opt     any
		refused bool
	}{
		{"two codes", pgx.QueryResultFormats{pgx.TextFormatCode, pgx.BinaryFormatCode}, true},
		{"one code", pgx.QueryResultFormats{pgx.BinaryFormatCode}, false},
		{"by oid", pgx.QueryResultFormatsByOID{pgtype.Int8OID: pgx.BinaryFormatCode}, false},
	}
	for _, o := range opts {
		t.Run(o.name, func(t *testing.T) {
			e := newPGEnv(t, "cache_statement")
			for i, c := range cases {
				id := int64(i + 1)
				if _, err := e.raw.Exec(e.ctx, "INSERT INTO accounts (id, owner, balance) VALUES ($1::bigint, 'o' || $1::bigint::text, 5)", id); err != nil {
					t.Fatal(err)
				}
				ctx := tok(e.ctx, uint64(10+i))
				var q interface {
					Query(context.Context, string, ...any) (pgx.Rows, error)
				} = e.db
				var tx pgx.Tx
				if c.tx {
					var err error
					if tx, err = e.db.Begin(ctx); err != nil {
						t.Fatal(err)
					}
					q = tx
				}
				rows, err := q.Query(ctx, c.sql, o.opt, id)
				n := 0
				if err == nil {
					for rows.Next() {
						n++
					}
					rows.Close()
					err = rows.Err()
				}
				if tx != nil {
					if err == nil {
						err = tx.Commit(ctx)
					} else {
						_ = tx.Rollback(ctx)
					}
				}
				var tokRow int64
				if qerr := e.raw.QueryRow(e.ctx, "SELECT COALESCE(max(fence_token), 0) FROM accounts").Scan(&tokRow); qerr != nil {
					t.Fatal(qerr)
				}
				switch {
				case o.refused && (!errors.Is(err, fencedsql.ErrUnsupported) || tokRow != 0):
					t.Errorf("%s (first use: %v): %v, highest token written %d; want ErrUnsupported, nothing written", c.name, i == 0, err, tokRow)
				case !o.refused && (err != nil || n != 1):
					t.Errorf("%s (first use: %v): %d row(s), %v; want one row, as pgx runs it", c.name, i == 0, n, err)
				}
			}
		})
	}
}
