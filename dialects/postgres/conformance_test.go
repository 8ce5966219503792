package postgres_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// Parallel (as each mode of TestConformanceQueryExecModes): every test of the suite
// works in a database of its own (testdb.Postgres) and changes no server setting, so
// the suites overlap each other's waits for the server (six suites in a row, about a
// minute each on two loaded cores, were this package's largest share).
func TestConformance(t *testing.T) {
	t.Parallel()
	fencetest.Run(t, fencetest.Postgres())
}

// The conformance suite in every pgx query exec mode (PgBouncer users run exec or
// simple_protocol): the token must be typed so that the fencing CASE stays BIGINT when
// pgx sends it as a literal. The modes run in parallel (see TestConformance).
func TestConformanceQueryExecModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := fencetest.Postgres()
			b.Name += "-" + mode
			fresh := b.DSN
			b.DSN = func(tb testing.TB) string {
				dsn := fresh(tb)
				sep := "?"
				if strings.Contains(dsn, "?") {
					sep = "&"
				}
				return dsn + sep + "default_query_exec_mode=" + mode
			}
			fencetest.Run(t, b)
		})
	}
}
