package mysql_test

import (
	"strconv"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// BenchmarkUpdate compares the fenced single-row UPDATE with the raw driver on the same
// database (see fencetest.Bench for the variants and ratios).
func BenchmarkUpdate(b *testing.B) { fencetest.Bench(b, fencetest.MySQL()) }

// BenchmarkClaim compares BEGIN + SELECT … FOR UPDATE + COMMIT in a token-bound
// transaction through the fenced driver (which claims the row first) with the same on
// the raw driver (see fencetest.BenchClaim).
func BenchmarkClaim(b *testing.B) { fencetest.BenchClaim(b, fencetest.MySQL()) }

// BenchmarkClaimWindow: a queue-style claim (ORDER BY … LIMIT 1), keyed on MariaDB.
func BenchmarkClaimWindow(b *testing.B) { fencetest.BenchClaimWindow(b, fencetest.MySQL()) }

// BenchmarkTombstone reports what the tombstone guard (docs/design.md, G9) costs a fenced DELETE +
// re-INSERT (see fencetest.BenchTombstone).
func BenchmarkTombstone(b *testing.B) {
	fencetest.BenchTombstone(b, fencetest.MySQL(), mysql.Dialect)
}

// BenchmarkDelete compares a single-row DELETE through the fenced driver (guards
// installed) with the raw driver's on a plain table, autocommit and in a transaction
// (see fencetest.BenchDelete).
func BenchmarkDelete(b *testing.B) {
	fencetest.BenchDelete(b, fencetest.MySQL(), mysql.Dialect)
}

// BenchmarkDeleteTwoStep compares a single-row DELETE sent as two statements (no
// guard: the fencing UPDATE, then the keyed DELETE) with the raw driver's DELETE (see
// fencetest.BenchDeleteTwoStep).
func BenchmarkDeleteTwoStep(b *testing.B) {
	fencetest.BenchDeleteTwoStep(b, fencetest.MySQL())
}

// BenchmarkDeleteTwoStepBulk: one two-statement DELETE of 100, 1000 and 10000 rows
// against the raw driver's (see fencetest.BenchDeleteTwoStepBulk).
func BenchmarkDeleteTwoStepBulk(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { fencetest.BenchDeleteTwoStepBulk(b, fencetest.MySQL(), n) })
	}
}
