package fencedpgx

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// stubDB answers every call at once: the wrapper's own cost, isolated.
type stubDB struct{}

func (stubDB) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.NewCommandTag("UPDATE 1"), nil
}
func (stubDB) Query(context.Context, string, ...any) (pgx.Rows, error) { return &errRows{}, nil }
func (stubDB) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults {
	return &batchResults{closed: true}
}
func (stubDB) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, nil
}
func (stubDB) BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error) { return nil, nil }

const benchUpdate = "UPDATE accounts SET balance = balance + 1 WHERE id = $1"

// BenchmarkLookupCached is the engine's per-statement cost through fencedpgx before
// anything is sent: the plan-cache hit. It must not allocate.
func BenchmarkLookupCached(b *testing.B) {
	p, err := Wrap(stubDB{}, fencedsql.Guard("accounts"), fencedsql.Guard("orders"))
	if err != nil {
		b.Fatal(err)
	}
	if err := p.lookup(benchUpdate); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := p.lookup(benchUpdate); err != nil {
			b.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { _ = p.lookup(benchUpdate) }); n != 0 {
		b.Fatalf("cached lookup allocates %v times", n)
	}
}

// BenchmarkWrapperOverhead is a fenced single-row UPDATE through fencedpgx over a DB
// that answers at once, against the same DB called directly with the rewritten SQL:
// the wrapper's whole cost per statement (plan lookup, token binding, argument
// conversion) without a round trip.
func BenchmarkWrapperOverhead(b *testing.B) {
	ctx := fencedsql.WithToken(context.Background(), 7)
	b.Run("raw", func(b *testing.B) {
		var db stubDB
		rewritten := `UPDATE accounts SET balance = balance + 1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1`
		b.ReportAllocs()
		for b.Loop() {
			if _, err := db.Exec(ctx, rewritten, 1, int64(7)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fenced", func(b *testing.B) {
		p, err := Wrap(stubDB{}, fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Exec(ctx, benchUpdate, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
