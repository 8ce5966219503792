package postgres_test

import (
	"context"
	"errors"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestPatchTriggerWritesPartitionDoor: patchDoor's self-write test looks for the
// table's own name (and the name of the relation the trigger is on) in the
// function's write statements. A BEFORE UPDATE trigger on a partitioned guarded table
// (cloned onto its partitions) whose function writes the row through the partition's
// name, then RETURNs NULL, is the PATCH idiom all the same: the nested UPDATE of the
// partition stores the stale holder's value (no fencing column named, recursion cut
// with pg_trigger_depth()), the fenced change is skipped. schema.Check reports no
// door, a fresh pool's lazy check passes, and the stale write is stored.
func TestPatchTriggerWritesPartitionDoor(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE TABLE accounts (id bigint NOT NULL, balance bigint NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0, PRIMARY KEY (id)) PARTITION BY RANGE (id)",
		"CREATE TABLE accounts_p0 PARTITION OF accounts FOR VALUES FROM (0) TO (1000)",
		"INSERT INTO accounts VALUES (1, 600, 60, 1)",
		`CREATE FUNCTION patch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			IF pg_trigger_depth() > 1 THEN RETURN NEW; END IF;
			UPDATE accounts_p0 SET balance = NEW.balance WHERE id = OLD.id;
			RETURN NULL; END $$`,
		"CREATE TRIGGER acc_patch BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION patch()")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sd := range reps[0].SideDoors {
		if strings.Contains(sd.Object, "acc_patch") {
			found = true
		}
	}
	if !found {
		t.Errorf("schema.Check reports no door for the PATCH trigger acc_patch writing the partition; doors %+v", reps[0].SideDoors)
	}
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 1 WHERE id = 1")
	var bal int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil {
		t.Fatal(err)
	}
	if bal != 600 {
		t.Errorf("stale token 5 (row token 60) stored balance %d through the PATCH trigger writing accounts_p0; err %v", bal, err)
	}
	if err != nil && !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("err %v", err)
	}
}
