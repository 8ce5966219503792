package fencetest

import (
	"database/sql"
	"slices"
	"testing"
	"time"
)

// Interleave is the measuring loop of every ratio benchmark in this repository: it runs
// the variants once per round, in an order rotated every round (so that no variant
// always runs first, or right after another), reports each variant's mean as
// name-ns/op, and returns the total time spent in each and their median latencies.
// Ratios of spent are the benchmarks' headline figures; ratios of p50 are robust to
// the bursts of a loaded machine. A variant's error fails the benchmark.
func Interleave(b *testing.B, names []string, fns []func() error) (spent, p50 []time.Duration) {
	b.Helper()
	return InterleaveAfter(b, names, nil, fns)
}

// InterleaveAfter is Interleave with an untimed step before each timed one: setup[i]
// (nil, or nil entries, for none) runs right before fns[i] in every round, outside the
// measurement — say, re-inserting the row that fns[i] deletes.
func InterleaveAfter(b *testing.B, names []string, setup, fns []func() error) (spent, p50 []time.Duration) {
	b.Helper()
	spent = make([]time.Duration, len(fns))
	lat := make([][]time.Duration, len(fns))
	b.ResetTimer()
	round := 0
	for b.Loop() {
		round++
		for k := range fns {
			i := (k + round) % len(fns)
			if i < len(setup) && setup[i] != nil {
				b.StopTimer()
				if err := setup[i](); err != nil {
					b.Fatalf("%s setup: %v", names[i], err)
				}
				b.StartTimer()
			}
			start := time.Now()
			if err := fns[i](); err != nil {
				b.Fatalf("%s: %v", names[i], err)
			}
			d := time.Since(start)
			spent[i] += d
			lat[i] = append(lat[i], d)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	p50 = make([]time.Duration, len(fns))
	for i, name := range names {
		b.ReportMetric(float64(spent[i].Nanoseconds())/n, name+"-ns/op")
		if len(lat[i]) > 0 {
			p50[i] = median(lat[i])
		}
	}
	return spent, p50
}

// Warm runs each variant n times before measuring: connections, statement caches, the
// rewrite cache and the server's plans.
func Warm(b *testing.B, n int, names []string, fns []func() error) {
	b.Helper()
	for i, fn := range fns {
		for range n {
			if err := fn(); err != nil {
				b.Fatalf("%s: %v", names[i], err)
			}
		}
	}
}

// SinglePool opens a pool of one connection, closed when the benchmark ends. Each
// variant of a ratio benchmark gets its own, so that each server backend is idle for
// the same time between its statements (a shared connection would favour the variants
// that run back to back on it).
func SinglePool(b *testing.B, driverName, dsn string) *sql.DB {
	b.Helper()
	p, err := sql.Open(driverName, dsn)
	if err != nil {
		b.Fatal(err)
	}
	p.SetMaxOpenConns(1)
	b.Cleanup(func() { p.Close() })
	return p
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
