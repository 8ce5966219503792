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

// BenchClaim measures what the FOR UPDATE claim costs. In a transaction bound to a
// token (fencedsql.WithToken on BeginTx), SELECT balance FROM accounts WHERE id = ?
// FOR UPDATE through the fenced driver claims the rows it reads: on PostgreSQL in one
// statement (a data-modifying WITH query that stamps the rows and returns them), on
// MySQL/MariaDB a claiming UPDATE of the same rows, then the SELECT. Interleaved in
// one run on the same table, each on its own single-connection pool:
//
//	fenced   BEGIN (token bound) + the SELECT … FOR UPDATE through the fenced driver + COMMIT
//	raw      BEGIN + the same SELECT … FOR UPDATE on the raw driver + COMMIT
//
// claim-cost = fenced/raw total time; claim-cost-p50 the ratio of median latencies.
// After the run it checks that the claims stamped the tokens on the row.
func BenchClaim(b *testing.B, be Backend) {
	benchClaim(b, be, "SELECT balance FROM accounts WHERE id = ? FOR UPDATE")
}

// BenchClaimWindow is BenchClaim for a windowed locking read, SELECT balance FROM
// accounts WHERE id >= ? ORDER BY id LIMIT 1 FOR UPDATE (a queue's "take the next
// row"): on PostgreSQL the claim by row locator, which compares the rows it stamped
// with the rows it locked inside the statement.
func BenchClaimWindow(b *testing.B, be Backend) {
	benchClaim(b, be, "SELECT balance FROM accounts WHERE id >= ? ORDER BY id LIMIT 1 FOR UPDATE")
}

func benchClaim(b *testing.B, be Backend, query string) {
	dsn := be.DSN(b)
	raw, err := sql.Open(be.RawName, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(be.TableDDL); err != nil {
		b.Fatal(err)
	}
	db := SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables=accounts"))
	rawPool := SinglePool(b, be.RawName, dsn)
	e := &env{b: be}
	ctx := context.Background()
	const id = 1
	tk := uint64(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, tk), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), id, 0); err != nil {
		b.Fatal(err)
	}
	sel := e.q(query)
	txn := func(p *sql.DB, c context.Context) error {
		tx, err := p.BeginTx(c, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var bal int64
		if err := tx.QueryRowContext(c, sel, id).Scan(&bal); err != nil {
			return err
		}
		return tx.Commit()
	}
	names := []string{"fenced", "raw"}
	fns := []func() error{
		func() error { tk++; return txn(db, fencedsql.WithToken(ctx, tk)) },
		func() error { return txn(rawPool, ctx) },
	}
	Warm(b, 20, names, fns)
	spent, p50 := Interleave(b, names, fns)
	b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "claim-cost")
	b.ReportMetric(float64(p50[0])/float64(p50[1]), "claim-cost-p50")
	var got int64
	if err := raw.QueryRowContext(ctx, e.q("SELECT fence_token FROM accounts WHERE id = ?"), id).Scan(&got); err != nil {
		b.Fatal(err)
	}
	if got != int64(tk) {
		b.Fatalf("fence_token = %d after the run, want %d: the SELECT … FOR UPDATE did not claim", got, tk)
	}
}

// BenchTombstone measures what the tombstone guard (G9) costs a fenced DELETE followed
// by the re-INSERT of the same key (the deleter re-inserting, under the same token).
// Three identical tables on the same database, all fenced by the wrapper, each
// written through its own single-connection pool, interleaved:
//
//	tombstoned  accounts: schema.Check(…, GuardSpec{Table: "accounts"})
//	            and its Fix run on a plain connection (row guard + tombstone triggers)
//	guarded     accounts_guarded: the row guard only (Guarder.GuardDDL)
//	plain       accounts_plain: no trigger
//
// tomb-cost = tombstoned/guarded total time (the tombstone triggers' own cost),
// tomb-vs-plain = tombstoned/plain; the -p50 metrics are the same ratios of medians.
// d must be be's dialect and implement dialect.Guarder and dialect.Tombstoner.
func BenchTombstone(b *testing.B, be Backend, d dialect.Dialect) {
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
	ctx := context.Background()
	const guarded, plain = "accounts_guarded", "accounts_plain"
	execAll(b, ctx, raw, []string{be.TableDDL,
		strings.Replace(be.TableDDL, "accounts", guarded, 1),
		strings.Replace(be.TableDDL, "accounts", plain, 1)})
	reps, err := schema.Check(ctx, raw, d, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		b.Fatal(err)
	}
	execAll(b, ctx, raw, reps[0].Fix)
	if reps, err := schema.Check(ctx, raw, d, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].OK() || !reps[0].Tombstoned {
		b.Fatalf("after Fix: %+v, %v", reps, err)
	}
	execAll(b, ctx, raw, g.GuardDDL(dialect.TableName{Name: guarded}, schema.DefaultTokenColumn, schema.DefaultVersionColumn))

	e := &env{b: be}
	const id = 1
	tk := uint64(1)
	tables := []string{"accounts", guarded, plain}
	names := []string{"tombstoned", "guarded", "plain"}
	fns := make([]func() error, len(tables))
	pools := make([]*sql.DB, len(tables))
	for i, table := range tables {
		p := SinglePool(b, be.DriverName, WithParam(dsn, "fenced_tables=accounts,"+guarded+","+plain))
		pools[i] = p
		del := e.q("DELETE FROM " + table + " WHERE id = ?")
		ins := e.q("INSERT INTO " + table + " (id, balance) VALUES (?, ?)")
		if _, err := p.ExecContext(fencedsql.WithToken(ctx, tk), ins, id, 0); err != nil {
			b.Fatal(err)
		}
		fns[i] = func() error {
			tk++
			c := fencedsql.WithToken(ctx, tk)
			if _, err := p.ExecContext(c, del, id); err != nil {
				return err
			}
			_, err := p.ExecContext(c, ins, id, 0)
			return err
		}
	}
	Warm(b, 20, names, fns)
	spent, p50 := Interleave(b, names, fns)
	b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "tomb-cost")
	b.ReportMetric(float64(p50[0])/float64(p50[1]), "tomb-cost-p50")
	b.ReportMetric(spent[0].Seconds()/spent[2].Seconds(), "tomb-vs-plain")
	b.ReportMetric(float64(p50[0])/float64(p50[2]), "tomb-vs-plain-p50")
	// The tombstone guard is live: a stale INSERT of the key, once deleted, is fenced.
	tk++
	if _, err := pools[0].ExecContext(fencedsql.WithToken(ctx, tk), e.q("DELETE FROM accounts WHERE id = ?"), id); err != nil {
		b.Fatal(err)
	}
	_, err = raw.ExecContext(ctx, e.q("INSERT INTO accounts (id, balance, fence_token) VALUES (?, ?, ?)"), id, 0, 1)
	if err == nil {
		b.Fatal("a stale plain INSERT after the run passed: the tombstone guard is not installed")
	}
}
