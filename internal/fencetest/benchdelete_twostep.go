package fencetest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// BenchDeleteTwoStep measures a single-row DELETE sent as two statements — the table
// without the guard, so that the wrapper stamps the row with a fencing UPDATE and then
// deletes it (keyed where the table's rows can be named: G10) — against the raw
// driver's DELETE. Interleaved in one run, each variant on its own single-connection
// pool:
//
//	twostep-auto  DELETE … WHERE id = ? through the fenced driver, autocommit (the
//	              wrapper's own transaction), on accounts without triggers
//	raw-auto      the same DELETE on the raw driver, on accounts_plain
//	twostep-tx    BEGIN (token bound) + the fenced DELETE + COMMIT
//	raw-tx        BEGIN + the raw DELETE + COMMIT
//
// Before each timed DELETE the row is put back, untimed (InterleaveAfter).
// twostep-auto and twostep-tx are the ratios of total times, the -p50 metrics those
// of medians.
func BenchDeleteTwoStep(b *testing.B, be Backend) {
	dsn, ctx := be.DSN(b), context.Background()
	withPlainTable(b, be, dsn)
	e := &env{b: be}
	fenced := []*sql.DB{SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables=accounts")), SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables=accounts"))}
	rawPools := []*sql.DB{SinglePool(b, be.RawName, dsn), SinglePool(b, be.RawName, dsn)}
	del := e.q("DELETE FROM accounts WHERE id = ?")
	delPlain := e.q("DELETE FROM " + plain + " WHERE id = ?")
	insPlain := e.q("INSERT INTO " + plain + " (id, balance) VALUES (?, ?)")
	ins := e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)")
	tok := fencedsql.WithToken(ctx, 1)
	deleted := deletedRows(b, 1)
	inTx := func(p *sql.DB, c context.Context, q string, id int) error { return deleteInTx(p, c, q, id, deleted) }
	names := []string{"twostep-auto", "raw-auto", "twostep-tx", "raw-tx"}
	setup := []func() error{
		func() error { _, err := fenced[0].ExecContext(tok, ins, 1, 0); return err },
		func() error { _, err := rawPools[0].ExecContext(ctx, insPlain, 2, 0); return err },
		func() error { _, err := fenced[1].ExecContext(tok, ins, 3, 0); return err },
		func() error { _, err := rawPools[1].ExecContext(ctx, insPlain, 4, 0); return err },
	}
	fns := []func() error{
		func() error { return deleted(fenced[0].ExecContext(tok, del, 1)) },
		func() error { return deleted(rawPools[0].ExecContext(ctx, delPlain, 2)) },
		func() error { return inTx(fenced[1], tok, del, 3) },
		func() error { return inTx(rawPools[1], ctx, delPlain, 4) },
	}
	Warm(b, 20, names, withSetup(setup, fns))
	spent, p50 := InterleaveAfter(b, names, setup, fns)
	b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "twostep-auto")
	b.ReportMetric(float64(p50[0])/float64(p50[1]), "twostep-auto-p50")
	b.ReportMetric(spent[2].Seconds()/spent[3].Seconds(), "twostep-tx")
	b.ReportMetric(float64(p50[2])/float64(p50[3]), "twostep-tx-p50")
}

// plain is the table of a benchmark's raw statements: accounts' copy without triggers.
const plain = "accounts_plain"

// withPlainTable creates accounts and plain (be.TableDDL) in dsn's database.
func withPlainTable(b *testing.B, be Backend, dsn string) {
	raw, err := sql.Open(be.RawName, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	execAll(b, context.Background(), raw, []string{be.TableDDL, strings.Replace(be.TableDDL, "accounts", plain, 1)})
}

// BenchDeleteTwoStepBulk is BenchDeleteTwoStep for one DELETE of n rows, autocommit:
// twostep-bulk is the fenced DELETE's total time over the raw driver's, each deleting
// n rows (ids 1..n; put back, untimed, before each). The keyed DELETE's restriction
// searches a list of the stamped keys per row (MySQL/MariaDB), so its cost grows with
// n² there.
func BenchDeleteTwoStepBulk(b *testing.B, be Backend, n int) {
	dsn, ctx := be.DSN(b), context.Background()
	withPlainTable(b, be, dsn)
	e := &env{b: be}
	fenced := SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables=accounts"))
	rawPool := SinglePool(b, be.RawName, dsn)
	tok := fencedsql.WithToken(ctx, 1)
	fill := func(db *sql.DB, c context.Context, table string) error {
		tx, err := db.BeginTx(c, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		ins := e.q("INSERT INTO " + table + " (id, balance) VALUES (?, ?)")
		for id := 1; id <= n; id++ {
			if _, err := tx.ExecContext(c, ins, id, 0); err != nil {
				return err
			}
		}
		return tx.Commit()
	}
	deletedAll := deletedRows(b, int64(n))
	names := []string{"twostep", "raw"}
	setup := []func() error{
		func() error { return fill(fenced, tok, "accounts") },
		func() error { return fill(rawPool, ctx, plain) },
	}
	fns := []func() error{
		func() error {
			return deletedAll(fenced.ExecContext(tok, e.q("DELETE FROM accounts WHERE balance = ?"), 0))
		},
		func() error {
			return deletedAll(rawPool.ExecContext(ctx, e.q("DELETE FROM "+plain+" WHERE balance = ?"), 0))
		},
	}
	Warm(b, 2, names, withSetup(setup, fns))
	spent, _ := InterleaveAfter(b, names, setup, fns)
	b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "twostep-bulk")
}
