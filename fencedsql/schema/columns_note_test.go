package schema_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
)

// The column query's note (dialect.Dialect.ColumnsQuery's third value) reports a view
// and a generated column as such, with no fix (red-team rt31d F4-F6), and any other
// relation that is not a table by its kind (rt33a F4, F7, F8); rows without one are
// judged by their flags alone.
func TestColumnsNote(t *testing.T) {
	for _, c := range []struct {
		name     string
		rows     [][]string
		problem  string // a substring of the one problem; "" for none
		notTable bool
	}{
		{"plain", [][]string{{"id", "1"}, {"fence_token", "1"}, {"version", "1"}}, "", false},
		{"empty note", [][]string{{"id", "1", ""}, {"fence_token", "1", ""}, {"version", "1", ""}}, "", false},
		{"view", [][]string{{"id", "0", "view"}, {"fence_token", "0", "view"}, {"version", "0", "view"}}, "t_v is a view, not a table", true},
		{"view of", [][]string{{"id", "1", "view:accounts"}, {"fence_token", "1", "view:accounts"}, {"version", "1", "view:accounts"}}, "(accounts) instead", true},
		{"foreign table", [][]string{{"id", "1", "foreign table"}, {"fence_token", "1", "foreign table"}, {"version", "1", "foreign table"}}, "t_v is a foreign table, not a table: its rows live in a table on the remote server", true},
		{"sequence", [][]string{{"last_value", "1", "sequence"}, {"log_cnt", "1", "sequence"}}, "t_v is a sequence, not a table", true},
		{"virtual table", [][]string{{"id", "0", "virtual table"}, {"fence_token", "0", "virtual table"}, {"version", "0", "virtual table"}}, "t_v is a virtual table, not a table", true},
		{"index", [][]string{{"id", "1", "index"}}, "t_v is an index, not a table", true},
		{"generated", [][]string{{"id", "1"}, {"fence_token", "1"}, {"Version", "1", "generated"}}, "version is a generated column", false},
	} {
		query := func(context.Context, string, ...any) ([][]string, error) { return c.rows, nil }
		v, err := schema.Columns(context.Background(), query, sqlite.Dialect, dialect.TableName{Name: "t_v"}, "fence_token", "version")
		if err != nil {
			t.Fatal(err)
		}
		if v.NotTable != c.notTable || len(v.Fix) != 0 {
			t.Errorf("%s: not a table %v, fix %q", c.name, v.NotTable, v.Fix)
		}
		switch {
		case c.problem == "" && len(v.Problems) != 0:
			t.Errorf("%s: problems %q, want none", c.name, v.Problems)
		case c.problem != "" && (len(v.Problems) != 1 || !strings.Contains(v.Problems[0], c.problem)):
			t.Errorf("%s: problems %q, want one holding %q", c.name, v.Problems, c.problem)
		}
	}
}
