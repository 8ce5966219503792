package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRunAgainstPostgres runs the service twice on a fresh database of the server named
// by FENCEDSQL_PG_DSN (skipped without it, a failure with FENCEDSQL_REQUIRE_SERVERS=1):
// each run debits once under a new lease, with a greater token.
func TestRunAgainstPostgres(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 1; i <= 2; i++ {
		var out bytes.Buffer
		if err := run(ctx, &out, dsn); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out.String())
		}
		want := fmt.Sprintf("balance %d\n", opening-i*debit)
		if !strings.Contains(out.String(), want) {
			t.Fatalf("run %d printed %q, want it to contain %q", i, out.String(), want)
		}
		if i == 2 && !strings.Contains(out.String(), "refused (fencedsql.ErrFenced)") {
			t.Fatalf("run %d printed %q: the stale write was not shown refused", i, out.String())
		}
	}
}

func TestWithParam(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u@h/db":       "postgres://u@h/db?fenced_tables=a",
		"postgres://u@h/db?x=1":   "postgres://u@h/db?x=1&fenced_tables=a",
		"host=h dbname=db user=u": "host=h dbname=db user=u fenced_tables=a",
	} {
		if got := withParam(dsn, "fenced_tables=a"); got != want {
			t.Errorf("withParam(%q) = %q, want %q", dsn, got, want)
		}
	}
}
