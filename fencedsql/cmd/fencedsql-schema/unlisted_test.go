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
// and its problems make the exit status non-zero, even when the listed table is fit.
func TestReportsRecordedTablesNotListed(t *testing.T) {
	dsn := sqliteDSN(t)
	raw := testdb.Open(t, "sqlite", dsn,
		"CREATE TABLE listed (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE left_out (id INTEGER PRIMARY KEY, fence_token BIGINT, version BIGINT)")
	if err := schema.RegisterTables(context.Background(), raw, sqlite.Dialect, schema.GuardSpec{Table: "left_out"}); err != nil {
		t.Fatal(err)
	}
	args := []string{"-driver", "sqlite", "-dsn", dsn, "-tables", "listed"}
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitProblems {
		t.Fatalf("-apply -tables listed: exit %d, want %d (left_out, registered, is unfit)\n%s\n%s", code, exitProblems, out, errOut)
	} else {
		wantContains(t, "report", out, "listed: OK", "not in -tables", "left_out:")
	}
	code, out, errOut := runCmd(t, append(args, "-print")...)
	if code != exitProblems || !strings.Contains(errOut, "left_out") || strings.Contains(out, "left_out") {
		t.Fatalf("-print: exit %d, stdout %q, stderr %q; want left_out named on stderr only, exit %d", code, out, errOut, exitProblems)
	}
}
