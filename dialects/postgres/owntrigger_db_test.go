package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The table's own BEFORE row triggers that may assign a fencing column
// (postgres.Dialect.TriggerDoors' ownTriggers): a function that gets the column's
// name as a trigger argument (a generic "keep the old value" function) counts, and so
// does a partition's own trigger (it fires for rows written through the parent);
// a disabled trigger, an AFTER trigger and one that sets an unrelated column do not.
// schema.Check reports each with DROP TRIGGER, the lazy check refuses the table.
func TestOwnTriggerDoors(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE TABLE acc (id bigint NOT NULL, region int NOT NULL, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0, updated_at timestamptz, PRIMARY KEY (id, region)) PARTITION BY LIST (region)",
		"CREATE TABLE acc_1 PARTITION OF acc FOR VALUES IN (1)",
		`CREATE FUNCTION keep_col() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
		"CREATE TRIGGER by_arg BEFORE UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION keep_col('x', 'FENCE_TOKEN')",
		`CREATE FUNCTION keep_ver() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.version := coalesce(NEW.version, OLD.version); RETURN NEW; END $$`,
		"CREATE TRIGGER part_own BEFORE INSERT OR UPDATE ON acc_1 FOR EACH ROW EXECUTE FUNCTION keep_ver()",
		"CREATE TRIGGER disabled BEFORE UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION keep_ver()",
		"ALTER TABLE acc DISABLE TRIGGER disabled",
		"CREATE TRIGGER after_upd AFTER UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION keep_ver()",
		`CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated_at := now(); RETURN NEW; END $$`,
		"CREATE TRIGGER touch BEFORE UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION touch()",
		// Cloned onto acc_1 from acc: judged once, on acc.
		"CREATE TRIGGER cloned BEFORE UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION keep_ver()")
	ctx := context.Background()
	spec := schema.GuardSpec{Table: "acc"}
	reps, err := schema.Check(ctx, raw, postgres.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	var objs []string
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == "own trigger" {
			objs = append(objs, sd.Object)
			if len(sd.Fix) != 1 || !strings.HasPrefix(sd.Fix[0], "DROP TRIGGER IF EXISTS ") {
				t.Errorf("fix of %s: %q", sd.Object, sd.Fix)
			}
		}
	}
	if got, want := strings.Join(objs, ","), "by_arg on public.acc,cloned on public.acc,part_own on public.acc_1"; got != want {
		t.Fatalf("own trigger doors %q, want %q; report %+v", got, want, reps[0])
	}
	db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=acc"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO acc (id, region) VALUES (1, 1)")
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "part_own") || strings.Contains(err.Error(), "touch") {
		t.Fatalf("lazy check: %v, want ErrSchema naming part_own", err)
	}
	rawWith(t, dsn, "DROP TRIGGER by_arg ON acc", "DROP TRIGGER part_own ON acc_1", "DROP TRIGGER cloned ON acc")
	reps, err = schema.Check(ctx, raw, postgres.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == "own trigger" {
			t.Fatalf("after the fix: %+v", sd)
		}
	}
}
