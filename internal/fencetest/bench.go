package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Bench measures, interleaved in one run on the same database and table, a single-row
// UPDATE sent four ways, and reports each one's latency and the throughput ratios:
//
//	fenced       the fenced driver, the user's statement (rewritten by the wrapper)
//	rewritten    the raw driver, the same rewritten SQL with the token as an argument
//	unfenced     the raw driver, the user's statement as it is (no fencing)
//	handwritten  the raw driver: BEGIN; SELECT fence_token … FOR UPDATE; compare in Go;
//	             UPDATE … SET fence_token; COMMIT (the alternative without fencedsql)
//
// vs-rewritten = rewritten/fenced time (the wrapper's own overhead; goal ≥ 0.98),
// vs-unfenced = unfenced/fenced (the whole cost of fencing; goal ≥ 0.90),
// vs-handwritten = handwritten/fenced (goal ≥ 2).
func Bench(b *testing.B, be Backend) {
	dsn := be.DSN(b)
	raw, err := sql.Open(be.RawName, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(be.TableDDL); err != nil {
		b.Fatal(err)
	}
	// Each variant on its own single-connection pool (see SinglePool).
	db := SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables=accounts"))
	rawRewritten, rawUnfenced, rawHand := SinglePool(b, be.RawName, dsn), SinglePool(b, be.RawName, dsn), SinglePool(b, be.RawName, dsn)
	e := &env{b: be}
	ctx := context.Background()
	const id = 1
	tk := uint64(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, tk), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), id, 0); err != nil {
		b.Fatal(err)
	}
	user := e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?")
	rewritten := e.q("UPDATE accounts SET balance = balance + 1, version = version + 1, fence_token = CASE WHEN fence_token <= ? THEN ? ELSE NULL END WHERE id = ?")
	rewrittenArgs := func(t uint64) []any { return []any{int64(t), int64(t), id} }
	if be.Numbered {
		rewritten = "UPDATE accounts SET balance = balance + 1, version = version + 1, fence_token = CASE WHEN fence_token <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1"
		rewrittenArgs = func(t uint64) []any { return []any{id, int64(t)} }
	}
	sel := e.q("SELECT fence_token FROM accounts WHERE id = ? FOR UPDATE")
	if be.Name == "sqlite" {
		sel = e.q("SELECT fence_token FROM accounts WHERE id = ?")
	}
	upd := e.q("UPDATE accounts SET balance = balance + 1, fence_token = ? WHERE id = ?")

	variants := []struct {
		name string
		fn   func(t uint64) error
	}{
		{"fenced", func(t uint64) error {
			_, err := db.ExecContext(fencedsql.WithToken(ctx, t), user, id)
			return err
		}},
		{"rewritten", func(t uint64) error {
			_, err := rawRewritten.ExecContext(ctx, rewritten, rewrittenArgs(t)...)
			return err
		}},
		{"unfenced", func(uint64) error {
			_, err := rawUnfenced.ExecContext(ctx, user, id)
			return err
		}},
		{"handwritten", func(t uint64) error {
			tx, err := rawHand.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			var cur int64
			if err := tx.QueryRowContext(ctx, sel, id).Scan(&cur); err != nil {
				return err
			}
			if cur > int64(t) {
				return errors.New("fenced")
			}
			if _, err := tx.ExecContext(ctx, upd, int64(t), id); err != nil {
				return err
			}
			return tx.Commit()
		}},
	}
	names := make([]string, len(variants))
	fns := make([]func() error, len(variants))
	for i, v := range variants {
		names[i] = v.name
		fns[i] = func() error { tk++; return v.fn(tk) }
	}
	Warm(b, 20, names, fns) // connections, statement caches and the rewrite cache
	spent, _ := Interleave(b, names, fns)
	b.ReportMetric(spent[1].Seconds()/spent[0].Seconds(), "vs-rewritten")
	b.ReportMetric(spent[2].Seconds()/spent[0].Seconds(), "vs-unfenced")
	b.ReportMetric(spent[3].Seconds()/spent[0].Seconds(), "vs-handwritten")
}
