package postgres_test

// The guards' own tables (red-team rt27c, "deleted stays deleted and the guards guard
// themselves"): a tombstone table or the token floor no longer as the guards created
// it — a retyped token column, a foreign key, a trigger, row security — or a trigger
// elsewhere that writes one, is a side door (dialect.SideDoorGuardTable,
// dialect.SideDoorGuardWriter): schema.Check reports it with the statements that
// restore the table, and the fenced pool refuses the guarded table with ErrSchema
// until they ran. After the Fix the red-team's attack fails.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestGuardTableTokenColumnRetyped (rt27c F1): `ALTER … fence_token TYPE text` on the
// tombstone table made the tombstone function's GREATEST compare as text ('60' above
// '100'), and a stale plain INSERT of a key deleted under 100 was accepted.
func TestGuardTableTokenColumnRetyped(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw, "ALTER TABLE fencedsql_tomb_accounts ALTER fence_token TYPE text")
	requireGuardDoor(t, ctx, raw, dsn, dialect.SideDoorGuardTable)
	var typ string
	raw.QueryRow("SELECT pg_catalog.format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'fencedsql_tomb_accounts'::regclass AND attname = 'fence_token'").Scan(&typ)
	if typ != "bigint" {
		t.Fatalf("after the Fix the token column is %q", typ)
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	for _, s := range []struct {
		tok uint64
		q   string
	}{{60, "DELETE FROM accounts WHERE id = 1"}, {90, "INSERT INTO accounts (id, balance) VALUES (1, 1)"}, {100, "DELETE FROM accounts WHERE id = 1"}} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, s.tok), s.q); err != nil {
			t.Fatalf("token %d %s: %v", s.tok, s.q, err)
		}
	}
	if _, err := raw.Exec("INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, -1, 90, 1)"); err == nil {
		t.Error("stale plain INSERT (token 90) of key 1 deleted under 100 accepted after the Fix")
	}
}

// TestGuardTableCascadeFromParent (rt27c F3): a foreign key ON DELETE CASCADE on the
// tombstone table let a DELETE of the (unguarded) parent, through the pool, erase the
// tombstone.
func TestGuardTableCascadeFromParent(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE rt27c_parent (id BIGINT PRIMARY KEY)", "INSERT INTO rt27c_parent VALUES (1)")
	testdb.Exec(t, raw, "ALTER TABLE fencedsql_tomb_accounts ADD CONSTRAINT rt27c_fk FOREIGN KEY (id) REFERENCES rt27c_parent (id) ON DELETE CASCADE")
	requireGuardDoor(t, ctx, raw, dsn, dialect.SideDoorGuardTable)
	tombAttack(t, ctx, dsn, true, 90, "DELETE FROM rt27c_parent WHERE id = 1")
}

// TestGuardTableFloorCascade (rt27c F4): a foreign key ON UPDATE CASCADE on the floor
// let an UPDATE of the parent, through the pool, lower the floor (and its copy). The
// floor tools judge the floor by the same condition: ErrFloorUnsafe while it holds.
func TestGuardTableFloorCascade(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "CREATE TABLE rt27c_fp (v BIGINT PRIMARY KEY)", "INSERT INTO rt27c_fp VALUES (50)",
		"ALTER TABLE fencedsql_floor ADD CONSTRAINT rt27c_ffk FOREIGN KEY (floor) REFERENCES rt27c_fp (v) ON UPDATE CASCADE")
	if _, err := schema.TokenFloor(ctx, raw, postgres.Dialect); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Errorf("TokenFloor of a floor with a foreign key: %v, want ErrFloorUnsafe", err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 60); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Errorf("RaiseTokenFloor of a floor with a foreign key: %v, want ErrFloorUnsafe", err)
	}
	requireGuardDoor(t, ctx, raw, dsn, dialect.SideDoorGuardTable)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE rt27c_fp SET v = 0 WHERE v = 50"); err != nil {
		t.Fatal(err)
	}
	if fl, err := schema.TokenFloor(ctx, raw, postgres.Dialect); err != nil || fl != 50 {
		t.Errorf("after the Fix and the parent's UPDATE: TokenFloor %d, %v; want 50", fl, err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, balance) VALUES (2, -1)"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after the Fix: write under token 20 below floor 50: %v, want ErrBelowFloor", err)
	}
}

// TestGuardTableFloorTrigger: a trigger on the floor other than its sync trigger (one
// that keeps the old floor makes every raise a no-op) is a door too, and the floor
// tools refuse the floor.
func TestGuardTableFloorTrigger(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw,
		"CREATE FUNCTION rt27c_keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.floor := OLD.floor; RETURN NEW; END $$",
		"CREATE TRIGGER rt27c_keep BEFORE UPDATE ON fencedsql_floor FOR EACH ROW EXECUTE FUNCTION rt27c_keep()")
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Errorf("RaiseTokenFloor of a floor with a foreign trigger: %v, want ErrFloorUnsafe", err)
	}
	requireGuardDoor(t, ctx, raw, dsn, dialect.SideDoorGuardTable)
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	if fl, err := schema.TokenFloor(ctx, raw, postgres.Dialect); err != nil || fl != 50 {
		t.Errorf("after the Fix: TokenFloor %d, %v; want 50", fl, err)
	}
}

// TestGuardTableTriggerOnTombstoneTable (rt27c F5): a BEFORE INSERT OR UPDATE trigger
// returning NULL on the tombstone table dropped every tombstone.
func TestGuardTableTriggerOnTombstoneTable(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw,
		"CREATE FUNCTION rt27c_drop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
		"CREATE TRIGGER rt27c_drop BEFORE INSERT OR UPDATE ON fencedsql_tomb_accounts FOR EACH ROW EXECUTE FUNCTION rt27c_drop()")
	requireGuardDoor(t, ctx, raw, dsn, dialect.SideDoorGuardTable)
	tombAttack(t, ctx, dsn, true, 0)
}

// TestGuardTableRowSecurity (rt27c F6): forced row security on the tombstone table
// (owned by a plain role) with a policy that shows tombstones to a DELETE only hid
// them from the INSERT check.
func TestGuardTableRowSecurity(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	var super bool
	raw.QueryRow("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super)
	if super {
		// A superuser bypasses row security even under FORCE: hand the tombstone table
		// (and the function that writes it) to a plain role, as the least-privilege
		// layout does.
		role := "rt27c_own_rowsec"
		raw.Exec("DROP ROLE IF EXISTS " + role)
		testdb.Exec(t, raw, "CREATE ROLE "+role+" NOLOGIN")
		t.Cleanup(func() { raw.Exec("DROP OWNED BY " + role + " CASCADE"); raw.Exec("DROP ROLE IF EXISTS " + role) })
		var fn string
		raw.QueryRow("SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proname LIKE 'fencedsql_tomb%accounts%' AND p.prosecdef LIMIT 1").Scan(&fn)
		if fn == "" {
			t.Fatal("set-up: no SECURITY DEFINER tombstone function found")
		}
		testdb.Exec(t, raw, "ALTER TABLE fencedsql_tomb_accounts OWNER TO "+role, "ALTER FUNCTION "+fn+" OWNER TO "+role)
	}
	testdb.Exec(t, raw,
		"ALTER TABLE fencedsql_tomb_accounts ENABLE ROW LEVEL SECURITY",
		"ALTER TABLE fencedsql_tomb_accounts FORCE ROW LEVEL SECURITY",
		"CREATE POLICY rt27c_in ON fencedsql_tomb_accounts USING (pg_catalog.current_query() ILIKE '%delete%') WITH CHECK (true)")
	requireGuardDoor(t, ctx, raw, dsn, dialect.SideDoorGuardTable)
	tombAttack(t, ctx, dsn, true, 0)
}

// TestGuardTableWriterElsewhere (rt27c F7): a trigger on an unguarded table whose
// SECURITY DEFINER function deletes from the tombstone table erased the tombstones on
// every INSERT into it through the pool.
func TestGuardTableWriterElsewhere(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
	testdb.Exec(t, raw,
		"CREATE FUNCTION rt27c_audit() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DELETE FROM fencedsql_tomb_accounts; RETURN NULL; END $$",
		"CREATE TRIGGER rt27c_audit AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION rt27c_audit()")
	requireGuardDoor(t, ctx, raw, dsn, dialect.SideDoorGuardWriter)
	tombAttack(t, ctx, dsn, true, 90, "INSERT INTO audit (msg) VALUES ('x')")
}

// TestGuardTableWriterOnTable: a user trigger on the guarded table itself that deletes
// the key's tombstone (firing before the tombstone check, by name) is a guard writer.
func TestGuardTableWriterOnTable(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw,
		"CREATE FUNCTION rt27c_untomb() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DELETE FROM fencedsql_tomb_accounts t WHERE t.id = NEW.id; RETURN NULL; END $$",
		"CREATE TRIGGER a_rt27c_untomb AFTER INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION rt27c_untomb()")
	requireGuardDoor(t, ctx, raw, dsn, dialect.SideDoorGuardWriter)
	tombAttack(t, ctx, dsn, true, 0)
}

// TestGuardTableGeneratedFencingColumn (rt27c F9): a fencing column the wrapper may not
// write (GENERATED ALWAYS AS IDENTITY, a stored generated column) failed every fenced
// write with the server's raw 428C9 while schema.Check reported the table fit: the lint
// reports it (ErrSchema from the lazy check), and its Fix makes the column writable.
func TestGuardTableGeneratedFencingColumn(t *testing.T) {
	for _, c := range []struct{ name, table, write string }{
		{"identity version", "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL GENERATED ALWAYS AS IDENTITY)",
			"UPDATE accounts SET balance = 1 WHERE id = 1"},
		{"generated token", "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL GENERATED ALWAYS AS (balance * 0) STORED, version BIGINT NOT NULL DEFAULT 0)",
			"UPDATE accounts SET balance = 1 WHERE id = 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			dsn := testdb.Postgres(t)
			raw := rawWith(t, dsn, c.table, "INSERT INTO accounts (id, balance) VALUES (1, 5)")
			reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(reps[0].Problems, "\n"), "GENERATED") && !strings.Contains(strings.Join(reps[0].Problems, "\n"), "generated column") {
				t.Errorf("schema.Check: problems %q, want the generated column reported", reps[0].Problems)
			}
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), c.write); !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("fenced write before the Fix: %v, want ErrSchema", err)
			}
			db.Close()
			testdb.Exec(t, raw, reps[0].Fix...)
			if reps, err = schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].OK() {
				t.Fatalf("after the Fix: %v, problems %q", err, reps[0].Problems)
			}
			db = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), c.write); err != nil {
				t.Errorf("fenced write after the Fix: %v", err)
			}
		})
	}
}

// TestGuardTableFloorWriterElsewhere: a trigger on an unguarded table whose function
// lowers the floor is a guard writer; after its Fix the floor holds.
func TestGuardTableFloorWriterElsewhere(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw,
		"CREATE FUNCTION rt27c_lower() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN UPDATE public.fencedsql_floor SET floor = 0; RETURN NULL; END $$",
		"CREATE TRIGGER rt27c_lower AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION rt27c_lower()")
	requireGuardDoor(t, ctx, raw, dsn, dialect.SideDoorGuardWriter)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO audit (msg) VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, balance) VALUES (2, -1)"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after the Fix: write under token 20 below floor 50: %v, want ErrBelowFloor", err)
	}
}
