package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A system-versioned tombstone table or token floor (ALTER TABLE … ADD SYSTEM
// VERSIONING: a session's system_versioning_asof would make the guards read them as
// of that time) is refused — by schema.Check, by the lazy check of a fresh pool's
// guarded write, by the floor tools (ErrFloorUnsafe) — and reported as what it is:
// system-versioned, with the Fix DROP SYSTEM VERSIONING, which keeps the tombstones
// and the floor. Never as "a view: drop it" (which erased the tombstones: a key
// deleted under 20 came back under 16), nor, for the tombstone table, as a changed
// primary key (MariaDB adds row_end to a versioned table's key). Red-team rt50b F2.
func TestVersionedGuardTableReportedAsVersioned(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, which := range []string{"fencedsql_tomb_ledger", "fencedsql_floor"} {
		t.Run(which, func(t *testing.T) {
			admin, dsn := triggerNamesSetup(t, "ledger", tombRenameLedger)
			fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger")
			if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "DELETE FROM ledger WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if err := schema.RaiseTokenFloor(ctx, admin, mysql.Dialect, 15); err != nil {
				t.Fatal(err)
			}
			testdb.Exec(t, admin, "ALTER TABLE "+which+" ADD SYSTEM VERSIONING")
			r := triggerNamesReport(t, admin, "ledger")
			joined := strings.Join(r.Problems, "\n")
			if r.OK() || !strings.Contains(joined, "system-versioned") {
				t.Fatalf("%s system-versioned: schema.Check does not report it as versioned: %q", which, r.Problems)
			}
			if strings.Contains(joined, "a view") || strings.Contains(joined, "drop it") || strings.Contains(joined, "drop the tombstone table") || strings.Contains(joined, "primary key") {
				t.Errorf("%s system-versioned is reported as a view or a re-keyed table:\n%s", which, joined)
			}
			fix := strings.Join(r.Fix, "\n")
			if !strings.Contains(strings.ToUpper(fix), "DROP SYSTEM VERSIONING") {
				t.Fatalf("no Fix that drops the versioning of %s; Fix: %q", which, r.Fix)
			}
			// Fail closed meanwhile: a fresh pool's guarded write, and the floor tools.
			fresh := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger")
			if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 30), "UPDATE ledger SET balance = 1 WHERE id = 2"); !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("a guarded write while %s is versioned: %v; want ErrSchema", which, err)
			}
			if which == "fencedsql_floor" {
				if _, err := schema.TokenFloor(ctx, admin, mysql.Dialect); !errors.Is(err, schema.ErrFloorUnsafe) {
					t.Errorf("TokenFloor on a versioned floor: %v; want ErrFloorUnsafe", err)
				}
				if err := schema.RaiseTokenFloor(ctx, admin, mysql.Dialect, 16); !errors.Is(err, schema.ErrFloorUnsafe) {
					t.Errorf("RaiseTokenFloor on a versioned floor: %v; want ErrFloorUnsafe", err)
				}
			}
			testdb.Exec(t, admin, r.Fix...)
			if r := triggerNamesReport(t, admin, "ledger"); !r.OK() {
				t.Errorf("after the Fix: %q", r.Problems)
			}
			var tok, floor int64
			if err := admin.QueryRowContext(ctx, "SELECT fence_token FROM fencedsql_tomb_ledger WHERE id = 1").Scan(&tok); err != nil || tok != 20 {
				t.Errorf("tombstone of key 1 after the Fix: %d (%v); want 20", tok, err)
			}
			if err := admin.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor); err != nil || floor != 15 {
				t.Errorf("floor after the Fix: %d (%v); want 15", floor, err)
			}
			after := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger")
			if _, err := after.ExecContext(fencedsql.WithToken(ctx, 16), "INSERT INTO ledger (id, balance, version) VALUES (1, 666, 1)"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("stale re-insert of key 1 (token 16, deleted under 20) after the Fix: %v; want ErrFenced", err)
			}
		})
	}
}
