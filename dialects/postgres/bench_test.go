package postgres_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// BenchmarkUpdate compares the fenced single-row UPDATE with the raw driver on the same
// database (see fencetest.Bench for the variants and ratios).
func BenchmarkUpdate(b *testing.B) { fencetest.Bench(b, fencetest.Postgres()) }
