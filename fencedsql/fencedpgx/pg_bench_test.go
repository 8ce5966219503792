package fencedpgx_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// BenchmarkUpdate measures, interleaved in one run (the order rotated every round) on
// the same database and table, a single-row UPDATE sent three ways, each on its own
// single-connection pgxpool:
//
//	fenced     fencedpgx over pgxpool, the user's statement (rewritten by the engine)
//	rewritten  raw pgxpool, the same rewritten SQL with the token as an argument
//	unfenced   raw pgxpool, the user's statement as it is (no fencing)
//
// vs-rewritten = rewritten/fenced total time (fencedpgx's own cost; goal ≥ 0.98),
// vs-unfenced = unfenced/fenced (the whole cost of fencing; goal ≥ 0.90); the -p50
// metrics are the same ratios of median latencies.
func BenchmarkUpdate(b *testing.B) {
	ctx := context.Background()
	dsn := testdb.Postgres(b)
	pool := func() *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			b.Fatal(err)
		}
		cfg.MaxConns, cfg.MinConns = 1, 1
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		return p
	}
	fencedPool, rawRewritten, rawUnfenced := pool(), pool(), pool()
	if _, err := rawUnfenced.Exec(ctx, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"); err != nil {
		b.Fatal(err)
	}
	db, err := fencedpgx.New(fencedPool, fencedsql.Guard("accounts"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(fencedsql.WithToken(ctx, 1), "INSERT INTO accounts (id, balance) VALUES (1, 0)"); err != nil {
		b.Fatal(err)
	}
	const user = "UPDATE accounts SET balance = balance + 1 WHERE id = $1"
	const rewritten = `UPDATE accounts SET balance = balance + 1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1`
	tk := uint64(1)
	names := []string{"fenced", "rewritten", "unfenced"}
	fns := []func() error{
		func() error {
			tk++
			_, err := db.Exec(fencedsql.WithToken(ctx, tk), user, 1)
			return err
		},
		func() error {
			tk++
			_, err := rawRewritten.Exec(ctx, rewritten, 1, int64(tk))
			return err
		},
		func() error {
			_, err := rawUnfenced.Exec(ctx, user, 1)
			return err
		},
	}
	fencetest.Warm(b, 20, names, fns) // connections, statement caches, the plan cache
	spent, p50 := fencetest.Interleave(b, names, fns)
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "vs-rewritten")
	b.ReportMetric(float64(spent[2])/float64(spent[0]), "vs-unfenced")
	b.ReportMetric(float64(p50[1])/float64(p50[0]), "vs-rewritten-p50")
	b.ReportMetric(float64(p50[2])/float64(p50[0]), "vs-unfenced-p50")
	var got, want int64
	if err := rawUnfenced.QueryRow(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&got); err != nil {
		b.Fatal(err)
	}
	if want = int64(tk); got != want {
		b.Fatalf("fence_token = %d, want %d", got, want)
	}
}
