package fencetest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// BenchGuard measures what the database-side guard costs the wrapper's fenced
// single-row UPDATE. Two identical tables on the same database, accounts (guard
// installed) and accounts_unguarded, are both fenced by the wrapper; each round
// updates one row of each, in an order rotated every round, each through its own
// single-connection pool (as in Bench). It reports
//
//	guarded-ns/op     the fenced UPDATE of the guarded table (mean)
//	unguarded-ns/op   the same statement on the table without the guard (mean)
//	guard-cost        guarded/unguarded total time (goal < 1.10)
//	guard-cost-p50    guarded/unguarded median latency: the same ratio, robust to the
//	                  bursts of a loaded machine (the total absorbs every stall)
//	raw-ns/op         the caller's UPDATE on the raw driver, on a third table without
//	                  the guard (accounts_raw), no fencing at all
//	guarded-vs-raw    raw/guarded total time: the fenced, guarded UPDATE's throughput
//	                  as a share of the raw driver's unguarded one (goal ≥ 0.95);
//	                  guarded-vs-raw-p50 the same from median latencies
//
// d must be be's dialect and implement dialect.Guarder.
func BenchGuard(b *testing.B, be Backend, d dialect.Dialect) {
	g, ok := d.(dialect.Guarder)
	if !ok {
		b.Fatalf("dialect %s does not implement dialect.Guarder", d.Name())
	}
	dsn := be.DSN(b)
	raw, err := sql.Open(be.RawName, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	const plainTable, rawTable = "accounts_unguarded", "accounts_raw"
	ctx := context.Background()
	execAll(b, ctx, raw, []string{be.TableDDL, strings.Replace(be.TableDDL, "accounts", plainTable, 1), strings.Replace(be.TableDDL, "accounts", rawTable, 1)})
	execAll(b, ctx, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, schema.DefaultTokenColumn, schema.DefaultVersionColumn))

	pool := func() *sql.DB {
		return SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables=accounts,"+plainTable))
	}
	e := &env{b: be}
	const id = 1
	tk := uint64(1)
	variants := []struct {
		name string
		db   *sql.DB
		upd  string
	}{
		{"guarded", pool(), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?")},
		{"unguarded", pool(), e.q("UPDATE " + plainTable + " SET balance = balance + 1 WHERE id = ?")},
	}
	for _, table := range []string{"accounts", plainTable} {
		if _, err := variants[0].db.ExecContext(fencedsql.WithToken(ctx, tk), e.q("INSERT INTO "+table+" (id, balance) VALUES (?, ?)"), id, 0); err != nil {
			b.Fatal(err)
		}
	}
	rawPool := SinglePool(b, be.RawName, dsn)
	if _, err := rawPool.ExecContext(ctx, e.q("INSERT INTO "+rawTable+" (id, balance) VALUES (?, ?)"), id, 0); err != nil {
		b.Fatal(err)
	}
	rawUpd := e.q("UPDATE " + rawTable + " SET balance = balance + 1 WHERE id = ?")
	run := func(i int) error {
		tk++
		_, err := variants[i].db.ExecContext(fencedsql.WithToken(ctx, tk), variants[i].upd, id)
		return err
	}
	names := []string{variants[0].name, variants[1].name, "raw"}
	fns := []func() error{func() error { return run(0) }, func() error { return run(1) },
		func() error { _, err := rawPool.ExecContext(ctx, rawUpd, id); return err }}
	Warm(b, 50, names, fns) // and the trigger's plan
	spent, p50 := Interleave(b, names, fns)
	b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "guard-cost")
	b.ReportMetric(float64(p50[0])/float64(p50[1]), "guard-cost-p50")
	b.ReportMetric(spent[2].Seconds()/spent[0].Seconds(), "guarded-vs-raw")
	b.ReportMetric(float64(p50[2])/float64(p50[0]), "guarded-vs-raw-p50")
}
