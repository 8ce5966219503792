package mysql

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The guards' own trigger bodies — of the table and of another guarded table of the
// database — are no guard writers (guardTables): they read the floor and write only
// their own table's tombstone table, so no guarded database is refused for its guards.
func TestGuardTriggersWriteNoOtherGuardTable(t *testing.T) {
	d := dialectImpl{}
	key := []dialect.KeyColumn{{Name: "id", Type: "bigint(20)"}}
	for _, table := range []string{"accounts", "other", "accounts2", strings.Repeat("x", 70)} {
		tn := dialect.TableName{Schema: "app", Name: table}
		ddl := append(d.GuardDDL(tn, "fence_token", "version"), d.TombstoneDDL(tn, key, "fence_token")...)
		for _, q := range ddl {
			if !strings.HasPrefix(q, "CREATE TRIGGER ") {
				continue
			}
			_, body, ok := strings.Cut(q, " FOR EACH ROW\n")
			if !ok {
				t.Fatalf("no body in %q", q)
			}
			if dialect.WritesTable(body, dialect.MySQLSyntax, dialect.FloorTable) {
				t.Errorf("%s: a guard trigger counts as writing the floor: %s", table, body)
			}
			if own := tombTable(tn).Name; table != "accounts" && dialect.WritesTable(body, dialect.MySQLSyntax, tombTable(dialect.TableName{Name: "accounts"}).Name) {
				t.Errorf("%s (tombstone table %s): a guard trigger counts as writing accounts' tombstone table: %s", table, own, body)
			}
		}
	}
}

// blindFloor is the dialect as an account that cannot see the floor table's triggers
// sees it (MySQL shows them only with the TRIGGER privilege): every floor safe.
type blindFloor struct{ dialectImpl }

func (blindFloor) GuardFloorsQuery() (string, []any) {
	q, args := dialectImpl{}.GuardFloorsQuery()
	from := strings.Index(q, " FROM (SELECT MIN(tr.TRIGGER_SCHEMA)")
	return "SELECT fl.db, fl.in_scope, 1, 1" + q[from:], args
}

// A raise whose write a trigger on the floor altered fails with ErrFloorUnsafe when
// the floor tools cannot see the trigger: RaiseTokenFloor reads the floor back
// (red-team rt27c F5b), and nothing is raised.
func TestRaiseReadsFloorBack(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	reps, err := schema.Check(ctx, raw, dialectImpl{}, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if err := schema.RaiseTokenFloor(ctx, raw, blindFloor{}, 10); err != nil {
		t.Fatalf("a raise without a trigger on the floor: %v", err)
	}
	testdb.Exec(t, raw, "CREATE TRIGGER keep_floor BEFORE UPDATE ON fencedsql_floor FOR EACH ROW SET NEW.floor = OLD.floor")
	if err := schema.RaiseTokenFloor(ctx, raw, blindFloor{}, 50); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Fatalf("a raise to 50 that a trigger kept at 10: %v, want ErrFloorUnsafe", err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, dialectImpl{}, 50); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Fatalf("a raise over a floor with a trigger, seen: %v, want ErrFloorUnsafe", err)
	}
}
