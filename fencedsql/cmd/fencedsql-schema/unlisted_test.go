package main

import (
	"context"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestReportsRecordedTablesNotListed (red-team rt40b F1): a -tables list that leaves
// out a table the registry records (which every fenced pool guards) does not pass it
// over in silence: the left-out table is checked and reported after the listed ones,
// and a warning on stderr names it; the exit status stays the listed table's.
func TestReportsRecordedTablesNotListed(t *testing.T) {
	dsn := sqliteDSN(t)
	raw := testdb.Open(t, "sqlite", dsn,
		"CREATE TABLE listed (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE left_out (id INTEGER PRIMARY KEY, fence_token BIGINT, version BIGINT)")
	if err := schema.RegisterTables(context.Background(), raw, sqlite.Dialect, schema.GuardSpec{Table: "left_out"}); err != nil {
		t.Fatal(err)
	}
	args := []string{"-driver", "sqlite", "-dsn", dsn, "-tables", "listed"}
	code, out, errOut := runCmd(t, append(args, "-apply")...)
	if code != exitOK || !strings.Contains(errOut, "warning: recorded as guarded but not in -tables, with problems (add them to -tables): left_out") {
		t.Fatalf("-apply -tables listed: exit %d, stderr %q; want %d and a warning naming left_out (registered, unfit)\n%s", code, errOut, exitOK, out)
	}
	wantContains(t, "report", out, "listed: OK", "not in -tables", "left_out: ")
	code, out, errOut = runCmd(t, append(args, "-print")...)
	if !strings.Contains(errOut, "left_out") || strings.Contains(out, "left_out") {
		t.Fatalf("-print: exit %d, stdout %q, stderr %q; want left_out named on stderr only", code, out, errOut)
	}
}
