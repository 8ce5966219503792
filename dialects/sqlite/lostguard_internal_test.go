package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// lostGuard over canned catalog answers: the tombstone table without the tombstone
// triggers on the table, and triggers named for the table on another table, are
// doors; the triggers on the table close them; the guard's trigger without its floor
// trigger is a door.
func TestLostGuardAnswers(t *testing.T) {
	d := dialectImpl{}
	tbl := dialect.SideDoorTable{Table: dialect.TableName{Name: "accounts"}, TokenColumn: "fence_token", VersionColumn: "version"}
	trg := func(name, on string) []string { return []string{"trigger", name, on} }
	tomb := []string{"table", "fencedsql_tomb_accounts", "fencedsql_tomb_accounts"}
	for _, c := range []struct {
		name string
		rows [][]string
		want int
	}{
		{"none", nil, 0},
		{"rebuilt", [][]string{tomb}, 1},
		{"renamed", [][]string{tomb, trg("fencedsql_guard_accounts", "accounts_old"), trg("fencedsql_tombins_accounts", "accounts_old"), trg("fencedsql_tombdel_accounts", "accounts_old")}, 2},
		{"intact", [][]string{tomb, trg("fencedsql_guard_accounts", "accounts"), trg("fencedsql_floor_accounts", "accounts"), trg("fencedsql_tombins_accounts", "Accounts"), trg("fencedsql_tombdel_accounts", "accounts")}, 0},
		{"guard only, intact", [][]string{trg("fencedsql_guard_accounts", "accounts"), trg("fencedsql_floor_accounts", "accounts")}, 0},
		// Half a guard: the UPDATE trigger without the floor's (red-team rt34b F1).
		{"guard without its floor trigger", [][]string{trg("fencedsql_guard_accounts", "accounts")}, 1},
	} {
		query := func(_ context.Context, q string, _ ...any) ([][]string, error) {
			if strings.Contains(q, "SELECT type, name, tbl_name") {
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
			if sd.Kind != dialect.SideDoorGuardLost || len(sd.Fix) != 0 {
				t.Errorf("%s: door %+v", c.name, sd)
			}
		}
	}
}
