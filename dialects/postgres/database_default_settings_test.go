// Settings a database default carries (ALTER DATABASE … SET: every new connection has
// them, with no SET the wrapper sees) × the oracles (1) a door refused by the lazy
// check, (2) a stale write refused, (3) the claim of an absent key recorded, a
// resurrection refused, (4) schema.Check reports the door. Red-team rt52a's sweep of
// about fifty settings held; a subset is kept here (client_encoding and a search_path
// before pg_catalog did not hold: guard_text_client_encoding_test.go,
// catalog_trust_test.go).

package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func dbDefaultName(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

type dbDefaultDoor struct {
	name  string
	ddl   []string
	drop  []string
	stale string // a write through the door, by the pool
}

var dbDefaultDoors = []dbDefaultDoor{
	{"trigger-other", []string{
		`CREATE FUNCTION door_trg() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE acc SET balance = NEW.x, version = version + 1 WHERE id = 1; RETURN NEW; END$$`,
		`CREATE TRIGGER door_trg AFTER INSERT ON door_other FOR EACH ROW EXECUTE FUNCTION door_trg()`,
	}, []string{"DROP TRIGGER door_trg ON door_other", "DROP FUNCTION door_trg()"}, "INSERT INTO door_other (x) VALUES (666)"},
	{"before-assign-token", []string{
		`CREATE FUNCTION aaa_tok() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.fence_token := 1000000; RETURN NEW; END$$`,
		`CREATE TRIGGER aaa_tok BEFORE UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION aaa_tok()`,
	}, []string{"DROP TRIGGER aaa_tok ON acc", "DROP FUNCTION aaa_tok()"}, ""},
	{"rule", []string{
		`CREATE RULE door_rule AS ON INSERT TO door_other DO ALSO UPDATE acc SET balance = NEW.x, version = version + 1 WHERE id = 1`,
	}, []string{"DROP RULE door_rule ON door_other"}, "INSERT INTO door_other (x) VALUES (666)"},
	{"view", []string{
		`CREATE VIEW door_view AS SELECT * FROM acc`,
	}, []string{"DROP VIEW door_view"}, "UPDATE door_view SET balance = 666, version = version + 1 WHERE id = 1"},
}

// dbDefaultSettings: settings a database (or role, or DSN) default can carry.
var dbDefaultSettings = []string{
	"transform_null_equals=on", "lock_timeout='1ms'", "plpgsql.variable_conflict=use_variable",
	"client_encoding='SQL_ASCII'", "quote_all_identifiers=on",
}

// TestDatabaseDefaultSettings: for each setting a database default can carry, under it
// (1) a door (trigger on another table, BEFORE trigger assigning the token, rule,
// view) is refused by the lazy check (ErrSchema/ErrUnsupported), (2) a stale write is
// refused (ErrFenced), (3) the claim of an absent key records it, (4) schema.Check
// reports the door.
func TestDatabaseDefaultSettings(t *testing.T) {
	for _, s := range dbDefaultSettings {
		t.Run(s, func(t *testing.T) {
			dbDefaultOracles(t, s)
		})
	}
}

func dbDefaultTyped(err error) bool {
	return cfgmTyped(err)
}

func dbDefaultOracles(t *testing.T, setting string) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setup := rawWith(t, dsn,
		"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"CREATE TABLE door_other (x bigint)",
		"INSERT INTO acc (id) VALUES (1), (2)")
	checkAcc(t, setup, dsn)
	if _, err := setup.ExecContext(ctx, "ALTER DATABASE "+dbDefaultName(t, dsn)+" SET "+setting); err != nil {
		t.Skipf("ALTER DATABASE SET %s: %v", setting, err)
	}
	setup.Close()
	// Connections opened from now on carry the setting.
	raw := rawWith(t, dsn)
	var shown string
	name := strings.SplitN(setting, "=", 2)[0]
	if err := raw.QueryRowContext(ctx, "SELECT current_setting($1)", name).Scan(&shown); err != nil {
		t.Logf("current_setting(%s): %v", name, err)
	}
	t.Logf("%s in force: %q", name, shown)
	// The schema check under the setting says the table is fit.
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		if !dbDefaultTyped(err) {
			t.Errorf("schema.Check without doors: untyped %v", err)
		}
		t.Logf("schema.Check without doors: %v", err)
	} else {
		for _, r := range reps {
			if len(r.Fix) > 0 || len(r.SideDoors) > 0 {
				t.Logf("schema.Check without doors proposes: problems=%q fix=%q", r.Problems, r.Fix)
			}
		}
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	// (2) stale write.
	_, e10 := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET balance = 10 WHERE id = 2")
	_, e5 := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE acc SET balance = 5 WHERE id = 2")
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM acc WHERE id = 2").Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	switch {
	case e10 != nil:
		if !dbDefaultTyped(e10) {
			t.Errorf("newer write: untyped %v", e10)
		}
		t.Logf("newer write refused: %v", e10)
	case e5 == nil || bal != 10:
		t.Errorf("stale write under %s: err=%v balance=%d token=%d", setting, e5, bal, tok)
	case !errors.Is(e5, fencedsql.ErrFenced):
		t.Errorf("stale write under %s: %v, want ErrFenced", setting, e5)
	}
	// (3) claim of an absent key, then an older INSERT of it.
	func() {
		cctx := fencedsql.WithToken(ctx, 60)
		tx, err := db.BeginTx(cctx, nil)
		if err != nil {
			t.Errorf("begin: %v", err)
			return
		}
		defer tx.Rollback() //nolint:errcheck
		var id int64
		err = tx.QueryRowContext(cctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 7).Scan(&id)
		if !errors.Is(err, sql.ErrNoRows) {
			if !dbDefaultTyped(err) {
				t.Errorf("claim: untyped %v", err)
			}
			t.Logf("claim refused: %v", err)
			return
		}
		if err := tx.Commit(); err != nil {
			if !dbDefaultTyped(err) {
				t.Errorf("claim commit: untyped %v", err)
			}
			t.Logf("claim commit refused: %v", err)
			return
		}
		err = insertAs(db, 40, "INSERT INTO acc (id) VALUES (7)")
		var n int
		raw.QueryRowContext(ctx, "SELECT count(*) FROM acc WHERE id = 7").Scan(&n) //nolint:errcheck
		if err == nil || n != 0 {
			t.Errorf("INSERT under 40 of a key claimed absent under 60 (setting %s): err=%v rows=%d", setting, err, n)
		} else if !errors.Is(err, fencedsql.ErrFenced) && !dbDefaultTyped(err) {
			t.Errorf("older INSERT: untyped %v", err)
		}
	}()
	// Delete then resurrect under an older token.
	if err := insertAs(db, 80, "DELETE FROM acc WHERE id = 2"); err == nil {
		err := insertAs(db, 70, "INSERT INTO acc (id, balance) VALUES (2, 70)")
		var n int
		raw.QueryRowContext(ctx, "SELECT count(*) FROM acc WHERE id = 2").Scan(&n) //nolint:errcheck
		if err == nil || n != 0 {
			t.Errorf("resurrection under %s: err=%v rows=%d", setting, err, n)
		}
	} else if !dbDefaultTyped(err) {
		t.Errorf("delete: untyped %v", err)
	}
	// (1) and (4): each door, a fresh pool.
	for _, d := range dbDefaultDoors {
		testdb.Exec(t, raw, d.ddl...)
		p := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
		_, err := p.ExecContext(fencedsql.WithToken(ctx, 100), "UPDATE acc SET balance = 100 WHERE id = 1")
		if err == nil {
			t.Errorf("door %s under %s: the lazy check let a guarded write through", d.name, setting)
		} else if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("door %s under %s: %v, want ErrSchema", d.name, setting, err)
		}
		reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
		if err != nil {
			t.Logf("schema.Check with door %s: %v", d.name, err)
			if !dbDefaultTyped(err) {
				t.Errorf("schema.Check with door %s: untyped %v", d.name, err)
			}
		} else {
			found := false
			for _, r := range reps {
				if len(r.SideDoors) > 0 || len(r.Problems) > 0 {
					found = true
				}
			}
			if !found {
				t.Errorf("door %s under %s: schema.Check reports nothing: %+v", d.name, setting, reps)
			}
		}
		p.Close()
		testdb.Exec(t, raw, d.drop...)
	}
}
