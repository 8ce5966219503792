package postgres_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestKeyMakingTriggerRefused (the PostgreSQL form of red-team rt48j F4, fail-open):
// a row trigger of the guarded table other than a BEFORE INSERT/UPDATE one, created
// after the guards, whose function makes a key exist again — an AFTER DELETE trigger
// named to run before fencedsql_tombstone_delete that re-inserts the deleted row at
// token 0, the same through dynamic SQL on TG_TABLE_NAME, an AFTER UPDATE trigger that
// re-creates the key a row left, a BEFORE DELETE trigger that inserts, an AFTER DELETE
// trigger that moves another row onto the deleted key — brought a key deleted under
// token 100 back, which a holder of token 90 then wrote. Each is now a door: reported
// by schema.Check with DROP TRIGGER, and a fenced pool refuses the table with
// ErrSchema; after the Fix the stale write is fenced.
func TestKeyMakingTriggerRefused(t *testing.T) {
	cases := []struct{ name, fn, trigger, object string }{
		{"after delete reinsert", `INSERT INTO accounts (id, balance, fence_token, version) VALUES (OLD.id, OLD.balance, 0, OLD.version + 1); RETURN NULL;`,
			`CREATE TRIGGER "Aaa_keep" AFTER DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION keep_row()`, "Aaa_keep on public.accounts"},
		{"after delete dynamic", `EXECUTE format('INSERT INTO %I.%I (id, balance, fence_token, version) VALUES ($1, $2, 0, 0)', TG_TABLE_SCHEMA, TG_TABLE_NAME) USING OLD.id, OLD.balance; RETURN NULL;`,
			`CREATE TRIGGER " dyn" AFTER DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION keep_row()`, " dyn on public.accounts"},
		{"after update rekey", `IF NEW.id <> OLD.id THEN INSERT INTO public."ACCOUNTS" (id, balance, fence_token, version) VALUES (OLD.id, 0, 0, 0); END IF; RETURN NULL;`,
			`CREATE TRIGGER a_rekey AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION keep_row()`, "a_rekey on public.accounts"},
		{"before delete insert", `INSERT INTO accounts (id, balance) SELECT OLD.id + 1, 0 ON CONFLICT DO NOTHING; RETURN OLD;`,
			`CREATE TRIGGER b_del BEFORE DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION keep_row()`, "b_del on public.accounts"},
		{"after delete move", `UPDATE accounts SET (balance, id) = (0, OLD.id) WHERE id = 2; RETURN NULL;`,
			`CREATE TRIGGER a_move AFTER DELETE ON accounts FOR EACH ROW WHEN (OLD.balance >= 0) EXECUTE FUNCTION keep_row()`, "a_move on public.accounts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			testdb.Exec(t, raw, "CREATE FUNCTION keep_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "+c.fn+" END $$", c.trigger)
			fix := requireDoor(t, ctx, dsn, dialect.SideDoorOwnTrigger, c.object)
			fixRestores(t, ctx, raw, fix)
			tombAttack(t, ctx, dsn, true, 0)
		})
	}
}

// TestKeyMakingTriggerNotForOtherWrites: the table's own row triggers that write it
// without making a key — an AFTER UPDATE updated_at-style touch of the row, an AFTER
// INSERT that updates another row's columns (a key in the value, not the target), a
// BEFORE DELETE that updates a counter — and an AFTER DELETE trigger that inserts into
// another table are no door: schema.Check reports the table OK and a fenced DELETE
// and the stale re-insert behave as without them.
func TestKeyMakingTriggerNotForOtherWrites(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t,
		"ALTER TABLE accounts ADD COLUMN touched timestamptz, ADD COLUMN parent bigint",
		"CREATE TABLE audit (id bigint, at timestamptz DEFAULT now())")
	testdb.Exec(t, raw,
		`CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			IF pg_trigger_depth() = 1 THEN UPDATE accounts SET touched = now() WHERE id = NEW.id; END IF; RETURN NULL; END $$`,
		"CREATE TRIGGER a_touch AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION touch()",
		`CREATE FUNCTION link() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE accounts SET parent = NEW.id, balance = balance WHERE id = NEW.id - 1; RETURN NULL; END $$`,
		"CREATE TRIGGER a_link AFTER INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION link()",
		`CREATE FUNCTION count_del() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE accounts SET balance = balance + 1 WHERE id = 0; RETURN OLD; END $$`,
		"CREATE TRIGGER b_count BEFORE DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION count_del()",
		`CREATE FUNCTION log_del() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit (id) VALUES (OLD.id); RETURN NULL; END $$`,
		"CREATE TRIGGER a_log AFTER DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION log_del()")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if !reps[0].OK() {
		t.Fatalf("schema.Check with triggers that make no key: problems %q", reps[0].Problems)
	}
	tombAttack(t, ctx, dsn, true, 0)
	var n int
	if err := raw.QueryRowContext(context.Background(), "SELECT count(*) FROM audit WHERE id = 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("audit rows for the fenced DELETE: %d, %v; want 1", n, err)
	}
}
