package fencedsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strconv"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

func benchCore(b *testing.B, d dialect.Dialect) *core {
	k, err := newCore([]Option{WithDialect(d), Guard("accounts"), Guard("orders")})
	if err != nil {
		b.Fatal(err)
	}
	return k
}

const typicalUpdate = `UPDATE accounts SET balance = balance - $1, updated_at = now() WHERE id = $2 RETURNING balance`

// BenchmarkPlanCached is the per-statement cost of a cached rewrite: a read-locked map
// lookup. It must not allocate.
func BenchmarkPlanCached(b *testing.B) {
	k := benchCore(b, pgTest)
	if _, err := k.plan(typicalUpdate, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.plan(typicalUpdate, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanPassthrough is the cost for a statement that writes no guarded table.
func BenchmarkPlanPassthrough(b *testing.B) {
	k := benchCore(b, pgTest)
	q := `SELECT id, name FROM customers WHERE id = $1`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.plan(q, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRewriteUncached is one full rewrite (lex, parse, splice) of a typical UPDATE.
func BenchmarkRewriteUncached(b *testing.B) {
	for _, d := range []dialect.Dialect{pgTest, mysqlTest} {
		q := typicalUpdate
		if !d.NumberedParams() {
			q = `UPDATE accounts SET balance = balance - ?, updated_at = now() WHERE id = ?`
		}
		b.Run(d.Name(), func(b *testing.B) {
			k := benchCore(b, d)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.rw.Rewrite(q, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCacheChurn rewrites more distinct statements than the cache holds.
func BenchmarkCacheChurn(b *testing.B) {
	k, err := newCore([]Option{WithDialect(pgTest), Guard("accounts"), WithCacheSize(64)})
	if err != nil {
		b.Fatal(err)
	}
	qs := make([]string, 128)
	for i := range qs {
		qs[i] = typicalUpdate + " -- " + strconv.Itoa(i)
	}
	i := 0
	for b.Loop() {
		if _, err := k.plan(qs[i%len(qs)], false); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPlanCachedSDK is the cached lookup with an OpenTelemetry SDK recording the
// cache counter: recording must not allocate either.
func BenchmarkPlanCachedSDK(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	k, err := newCore([]Option{WithDialect(pgTest), Guard("accounts"), WithMeterProvider(mp)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := k.plan(typicalUpdate, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.plan(typicalUpdate, false); err != nil {
			b.Fatal(err)
		}
	}
}

// noopDriver answers every Exec at once, so that a benchmark over it measures only
// database/sql and the wrapper.
type noopDriver struct{}
type noopConn struct{}

func (noopDriver) Open(string) (driver.Conn, error)  { return noopConn{}, nil }
func (noopConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("noop: no prepare") }
func (noopConn) Close() error                        { return nil }
func (noopConn) Begin() (driver.Tx, error)           { return nil, errors.New("noop: no tx") }
func (noopConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}

// BenchmarkWrapperOverhead isolates the wrapper's own cost per guarded UPDATE: the same
// statement through database/sql over a driver that does nothing, raw (the rewritten
// SQL with the token as an argument) and fenced (the user's SQL). The difference is
// what the wrapper adds to every real round trip.
func BenchmarkWrapperOverhead(b *testing.B) {
	ctx := context.Background()
	raw := sql.OpenDB(DSNConnector(noopDriver{}, ""))
	fenced := OpenDB(DSNConnector(noopDriver{}, ""), WithDialect(pgTest), Guard("accounts"), WithSchemaCheck(false))
	defer raw.Close()
	defer fenced.Close()
	user := "UPDATE accounts SET balance = balance + 1 WHERE id = $1"
	rewritten := `UPDATE accounts SET balance = balance + 1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1`
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := raw.ExecContext(ctx, rewritten, 1, int64(7)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fenced", func(b *testing.B) {
		tctx := WithToken(ctx, 7)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := fenced.ExecContext(tctx, user, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
