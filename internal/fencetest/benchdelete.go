package fencetest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// BenchDelete measures what fencing costs a single-row DELETE through the fenced
// driver: one statement where the guard is installed (dialect.DeleteFencer), else a
// fencing UPDATE that stamps the deleter's token and the DELETE of the rows carrying it
// (in the wrapper's own transaction when the caller has none). Interleaved in one
// run, each variant on its own single-connection pool:
//
//	fenced-auto   DELETE … WHERE id = ? through the fenced driver, autocommit, on
//	              accounts with the documented set-up (schema.Check's Fix: row guard
//	              and tombstone guard)
//	raw-auto      the same DELETE on the raw driver, on accounts_plain (no trigger)
//	fenced-tx     BEGIN (token bound) + the fenced DELETE + COMMIT
//	raw-tx        BEGIN + the raw DELETE on accounts_plain + COMMIT
//	guarded-auto  the fenced DELETE on accounts_guarded: the row guard only (GuardDDL)
//	guarded-tx    BEGIN (token bound) + that DELETE + COMMIT
//
// Before each timed DELETE the row is put back, untimed (InterleaveAfter).
// delete-cost-auto = fenced-auto/raw-auto total time, delete-cost-tx = fenced-tx/raw-tx,
// delete-guard-auto = guarded-auto/raw-auto, delete-guard-tx = guarded-tx/raw-tx (the
// fenced DELETE without the tombstone's INSERT into its table); the -p50 metrics are
// the same ratios of medians. d must be be's dialect and implement dialect.Guarder.
func BenchDelete(b *testing.B, be Backend, d dialect.Dialect) {
	dsn := be.DSN(b)
	raw, err := sql.Open(be.RawName, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	const plain = "accounts_plain"
	execAll(b, ctx, raw, []string{be.TableDDL, strings.Replace(be.TableDDL, "accounts", plain, 1)})
	reps, err := schema.Check(ctx, raw, d, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		b.Fatal(err)
	}
	execAll(b, ctx, raw, reps[0].Fix)
	const guarded = "accounts_guarded"
	execAll(b, ctx, raw, append([]string{strings.Replace(be.TableDDL, "accounts", guarded, 1)},
		d.(dialect.Guarder).GuardDDL(dialect.TableName{Name: guarded}, schema.DefaultTokenColumn, schema.DefaultVersionColumn)...))

	e := &env{b: be}
	fenced := []*sql.DB{SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables=accounts")), SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables=accounts"))}
	rawPools := []*sql.DB{SinglePool(b, be.RawName, dsn), SinglePool(b, be.RawName, dsn)}
	guardedPools := []*sql.DB{SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables="+guarded)), SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables="+guarded))}
	delGuarded := e.q("DELETE FROM " + guarded + " WHERE id = ?")
	insGuarded := e.q("INSERT INTO " + guarded + " (id, balance) VALUES (?, ?)")
	del := e.q("DELETE FROM accounts WHERE id = ?")
	delPlain := e.q("DELETE FROM " + plain + " WHERE id = ?")
	ins := e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)")
	insPlain := e.q("INSERT INTO " + plain + " (id, balance) VALUES (?, ?)")
	tk := uint64(1)
	// One row per variant (ids 1–4), deleted by it and put back before its next DELETE.
	deleted := deletedRows(b, 1)
	inTx := func(p *sql.DB, c context.Context, q string, id int) error { return deleteInTx(p, c, q, id, deleted) }
	names := []string{"fenced-auto", "raw-auto", "fenced-tx", "raw-tx", "guarded-auto", "guarded-tx"}
	setup := []func() error{
		func() error {
			tk++
			_, err := fenced[0].ExecContext(fencedsql.WithToken(ctx, tk), ins, 1, 0)
			return err
		},
		func() error { _, err := rawPools[0].ExecContext(ctx, insPlain, 2, 0); return err },
		func() error {
			tk++
			_, err := fenced[1].ExecContext(fencedsql.WithToken(ctx, tk), ins, 3, 0)
			return err
		},
		func() error { _, err := rawPools[1].ExecContext(ctx, insPlain, 4, 0); return err },
		func() error {
			tk++
			_, err := guardedPools[0].ExecContext(fencedsql.WithToken(ctx, tk), insGuarded, 5, 0)
			return err
		},
		func() error {
			tk++
			_, err := guardedPools[1].ExecContext(fencedsql.WithToken(ctx, tk), insGuarded, 6, 0)
			return err
		},
	}
	fns := []func() error{
		func() error { return deleted(fenced[0].ExecContext(fencedsql.WithToken(ctx, tk), del, 1)) },
		func() error { return deleted(rawPools[0].ExecContext(ctx, delPlain, 2)) },
		func() error { return inTx(fenced[1], fencedsql.WithToken(ctx, tk), del, 3) },
		func() error { return inTx(rawPools[1], ctx, delPlain, 4) },
		func() error { return deleted(guardedPools[0].ExecContext(fencedsql.WithToken(ctx, tk), delGuarded, 5)) },
		func() error { return inTx(guardedPools[1], fencedsql.WithToken(ctx, tk), delGuarded, 6) },
	}
	Warm(b, 20, names, withSetup(setup, fns))
	spent, p50 := InterleaveAfter(b, names, setup, fns)
	b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "delete-cost-auto")
	b.ReportMetric(float64(p50[0])/float64(p50[1]), "delete-cost-auto-p50")
	b.ReportMetric(spent[2].Seconds()/spent[3].Seconds(), "delete-cost-tx")
	b.ReportMetric(float64(p50[2])/float64(p50[3]), "delete-cost-tx-p50")
	b.ReportMetric(spent[4].Seconds()/spent[1].Seconds(), "delete-guard-auto")
	b.ReportMetric(float64(p50[4])/float64(p50[1]), "delete-guard-auto-p50")
	b.ReportMetric(spent[5].Seconds()/spent[3].Seconds(), "delete-guard-tx")
	b.ReportMetric(float64(p50[5])/float64(p50[3]), "delete-guard-tx-p50")
}

// deletedRows returns a check of a DELETE's result: no error and n rows affected (a
// benchmark that deleted another count is wrong, and stops).
func deletedRows(b *testing.B, n int64) func(sql.Result, error) error {
	return func(res sql.Result, err error) error {
		if err != nil {
			return err
		}
		if got, err := res.RowsAffected(); err != nil || got != n {
			b.Fatalf("DELETE affected %d rows (%v), want %d", got, err, n)
		}
		return nil
	}
}

// deleteInTx runs the DELETE q of id in a transaction on p, judged by check, and
// commits it.
func deleteInTx(p *sql.DB, c context.Context, q string, id int, check func(sql.Result, error) error) error {
	tx, err := p.BeginTx(c, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := check(tx.ExecContext(c, q, id)); err != nil {
		return err
	}
	return tx.Commit()
}

// withSetup returns fns, each run after its setup: the warm-up of an InterleaveAfter
// measurement.
func withSetup(setup, fns []func() error) []func() error {
	warm := make([]func() error, len(fns))
	for i := range fns {
		warm[i] = func() error {
			if err := setup[i](); err != nil {
				return err
			}
			return fns[i]()
		}
	}
	return warm
}
