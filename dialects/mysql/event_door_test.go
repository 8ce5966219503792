package mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// accCheckProblems is every problem schema.Check reports for acc.
func accCheckProblems(t *testing.T, admin *sql.DB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, r := range reports {
		problems = append(problems, r.Problems...)
	}
	return problems
}

// TestEventWritingGuardTablesIsDoor: a scheduled event whose body writes acc's
// tombstone table, the token floor or acc itself is reported by schema.Check, as a
// routine or trigger with that body is (red-team rt46b F2): it runs as its definer on
// its schedule and erases tombstones, lowers the floor or writes acc unfenced. The
// events are created DISABLEd (the shared server's scheduler is off, and a disabled
// event counts: it can be enabled); one writing another table is not reported.
func TestEventWritingGuardTablesIsDoor(t *testing.T) {
	for _, c := range []struct {
		name, body string
		door       bool
	}{
		{"DeleteTombstones", "DELETE FROM fencedsql_tomb_acc", true},
		{"LowerTombstoneTokens", "UPDATE fencedsql_tomb_acc SET fence_token = 0", true},
		{"QuotedNameInBlock", "BEGIN DELETE FROM `fencedsql_tomb_acc` WHERE fence_token > 0; END", true},
		{"LowerFloor", "UPDATE fencedsql_floor SET floor = 0", true},
		{"WritesGuardedTable", "UPDATE acc SET balance = 0, version = version + 1", true},
		{"ReadsOnly", "SELECT COUNT(*) INTO @fsql_event_n FROM acc", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, admin, _ := absentMy(t)
			if c.name == "LowerFloor" {
				if _, err := admin.Exec("SELECT 1 FROM fencedsql_floor LIMIT 1"); err != nil {
					t.Skipf("no floor table: %v", err)
				}
			}
			testdb.Exec(t, admin, "CREATE EVENT fsql_event_door ON SCHEDULE EVERY 1 HOUR DISABLE DO "+c.body)
			problems := accCheckProblems(t, admin)
			reported := false
			for _, p := range problems {
				if strings.Contains(p, "fsql_event_door") {
					reported = true
				}
			}
			if reported != c.door {
				t.Fatalf("event DO %s: reported %v, want %v (problems: %q)", c.body, reported, c.door, problems)
			}
		})
	}
}
