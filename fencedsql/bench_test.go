package fencedsql

import (
	"context"
	"strconv"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

func benchCore(b *testing.B, d Dialect) *core {
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
	for _, d := range []Dialect{pgTest, mysqlTest} {
		q := typicalUpdate
		if !d.NumberedParams() {
			q = `UPDATE accounts SET balance = balance - ?, updated_at = now() WHERE id = ?`
		}
		b.Run(d.Name(), func(b *testing.B) {
			k := benchCore(b, d)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.rw.rewrite(q, false); err != nil {
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
