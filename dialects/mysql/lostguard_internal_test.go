package mysql

import (
	"context"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// lostGuard over canned catalog answers: a trigger named for the table on another
// table is a door whatever the account's privileges; the survivors (fence function,
// tombstone table) are one only with a privilege that shows the table's triggers;
// triggers present on the table close it; no rows, no door; the guard's trigger
// without its floor trigger is a door.
func TestLostGuardAnswers(t *testing.T) {
	d := dialectImpl{}
	tbl := dialect.SideDoorTable{Table: dialect.TableName{Name: "accounts"}, TokenColumn: "fence_token", VersionColumn: "version"}
	trg := func(name, on string) []string { return []string{"trigger", name, on} }
	fn := []string{"function", "fencedsql_fence_accounts", ""}
	tomb := []string{"table", "fencedsql_tomb_accounts", ""}
	priv := []string{"privilege", "INSERT", ""}
	present := [][]string{trg("fencedsql_guard_accounts", "accounts"), trg("fencedsql_floor_accounts", "accounts"), trg("fencedsql_tombins_accounts", "accounts"), trg("fencedsql_tombdel_accounts", "accounts")}
	for _, c := range []struct {
		name string
		rows [][]string
		want int
	}{
		{"none", nil, 0},
		{"triggers on the old table", [][]string{trg("fencedsql_guard_accounts", "_accounts_old"), trg("fencedsql_floor_accounts", "_accounts_old"), trg("fencedsql_tombins_accounts", "_accounts_old")}, 2},
		{"only the floor trigger elsewhere", [][]string{trg("fencedsql_floor_accounts", "_accounts_old")}, 1},
		{"survivors without a privilege", [][]string{fn, tomb}, 0},
		{"survivors with a privilege", [][]string{fn, tomb, priv}, 2},
		{"tombstone table only", [][]string{tomb, priv, trg("fencedsql_guard_accounts", "accounts"), trg("fencedsql_floor_accounts", "accounts")}, 1},
		// Half a guard: the UPDATE trigger without the floor's (red-team rt34b F1).
		{"guard without its floor trigger", [][]string{trg("fencedsql_guard_accounts", "accounts")}, 1},
		{"intact", append([][]string{fn, tomb, priv}, present...), 0},
		{"intact, other names", append([][]string{fn, tomb, priv, trg("fencedsql_guard_accounts_old", "accounts_old")}, present...), 0},
	} {
		query := func(_ context.Context, q string, _ ...any) ([][]string, error) {
			if strings.Contains(q, "UNION ALL SELECT 'privilege'") {
				return c.rows, nil
			}
			return nil, nil
		}
		doors, err := d.TriggerDoors(context.Background(), query, tbl)
		if err != nil {
			t.Fatal(err)
		}
		if len(doors) != c.want {
			t.Errorf("%s: %d doors %+v, want %d", c.name, len(doors), doors, c.want)
		}
		for _, sd := range doors {
			if sd.Kind != dialect.SideDoorGuardLost || sd.Note || len(sd.Fix) != 0 || !strings.Contains(sd.Problem, "fencedsql-schema -apply") {
				t.Errorf("%s: door %+v", c.name, sd)
			}
		}
	}
}
