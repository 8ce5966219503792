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
// so does a disabled one (one ALTER TABLE … ENABLE TRIGGER away: red-team rt44d F1);
// an AFTER trigger and one that sets an unrelated column do not.
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
	if got, want := strings.Join(objs, ","), "by_arg on public.acc,cloned on public.acc,disabled on public.acc,part_own on public.acc_1"; got != want {
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
	rawWith(t, dsn, "DROP TRIGGER by_arg ON acc", "DROP TRIGGER part_own ON acc_1", "DROP TRIGGER cloned ON acc", "DROP TRIGGER disabled ON acc")
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

// A table's own BEFORE UPDATE trigger that puts the old token back in place of the
// fencing NULL (NEW.fence_token := COALESCE(NEW.fence_token, OLD.fence_token)) is the
// door ownTriggers exists to report, and the lazy check refuses a pool over it. But
// ownTriggers skips every trigger whose function's name starts with "fencedsql_"
// (p.proname NOT LIKE 'fencedsql\_%', in any schema), meant for the guard's own
// functions: the same trigger calling a function so named is neither reported by
// schema.Check nor refused by the lazy check. Named to fire before fencedsql_guard
// ("a_…"), it turns the wrapper's refused stale UPDATE into an accepted one, the row
// guard installed: the guard then sees the old token and an advanced version. Right:
// exclude only the guard's own functions (the table's fencedsql_guard_/tombstone_
// functions, by name and schema, or by the triggers GuardDDL/TombstoneDDL create), and
// report this trigger; the stale UPDATE fails with ErrFenced (or the pool with
// ErrSchema).
func TestOwnTriggerNamedLikeGuardReported(t *testing.T) {
	ctx := context.Background()
	dsn, raw := guardBodyInstalled(t)
	for _, q := range []string{
		`CREATE FUNCTION public.fencedsql_keep_token() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.fence_token := COALESCE(NEW.fence_token, OLD.fence_token); RETURN NEW; END $$`,
		`CREATE TRIGGER a_keep BEFORE UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION public.fencedsql_keep_token()`,
	} {
		if err := guardBodyExec(t, raw, q); err != nil {
			t.Fatal(err)
		}
	}
	r := guardBodyReport(t, raw)
	if r.OK() {
		t.Fatalf("schema.Check reports OK; want the door reported")
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if err := guardBodyExec(t, raw, "INSERT INTO acc (id, balance, fence_token, version) VALUES (7, 100, 20, 1)"); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE acc SET balance = 666 WHERE id = 7")
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM acc WHERE id = 7").Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if bal == 666 {
		t.Fatalf("a stale UPDATE (token 5) of a row written under token 20 went through the fenced pool (err = %v; row now balance %d, token %d) past a BEFORE trigger whose function is named fencedsql_…; schema.Check: OK=%v %q; want the trigger reported and the write refused (ErrFenced or ErrSchema)", err, bal, tok, r.OK(), r.Problems)
	}
}
