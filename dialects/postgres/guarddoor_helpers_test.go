package postgres_test

import (
	"context"
	"database/sql"
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

// The steps the tests of the guards' own doors share (guardtable_test.go,
// guardwriter_doors_test.go): a guarded accounts table, the door reported and refused,
// its Fix, and the tombstone attack that must fail afterwards.

const guardTableAccounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"

// guardedWith creates setup's objects on the database dsn names and installs the
// guards of accounts (schema.Check's Fix); it returns a plain connection.
func guardedWith(t *testing.T, ctx context.Context, dsn string, setup ...string) *sql.DB {
	t.Helper()
	raw := rawWith(t, dsn, setup...)
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	return raw
}

// guardedAccounts creates a database with accounts (and the extra statements'
// objects), key 1 under token 60, and installs the guards (schema.Check's Fix). It
// returns a context for the test, the database's DSN and a plain connection.
func guardedAccounts(t *testing.T, extra ...string) (context.Context, string, *sql.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, append(append([]string{guardTableAccounts}, extra...),
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1)")...)
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	return ctx, dsn, raw
}

// requireDoor checks that schema.Check reports on accounts a door of kind whose Object
// holds object ("" for any), with a Fix, and that a fenced pool refuses a write to
// accounts with ErrSchema naming the door; it returns the report's Fix (fixRestores).
func requireDoor(t *testing.T, ctx context.Context, dsn string, kind dialect.SideDoorKind, object string) []string {
	t.Helper()
	return requireDoorFix(t, ctx, dsn, kind, object, true)
}

// requireDoorNoFix is requireDoor for a door that may come without a Fix; it returns
// the door's own Fix.
func requireDoorNoFix(t *testing.T, ctx context.Context, dsn string, kind dialect.SideDoorKind, object string) []string {
	t.Helper()
	return requireDoorFix(t, ctx, dsn, kind, object, false)
}

func requireDoorFix(t *testing.T, ctx context.Context, dsn string, kind dialect.SideDoorKind, object string, withFix bool) []string {
	t.Helper()
	raw := testdb.Open(t, "pgx", dsn)
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	var doorFix []string
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == kind && strings.Contains(sd.Object, object) && !sd.Note && (len(sd.Fix) > 0 || !withFix) {
			found, doorFix = true, sd.Fix
		}
	}
	if reps[0].OK() || !found {
		t.Fatalf("schema.Check: OK=%v, want a %q door on %q (with a Fix: %v) (problems %q)", reps[0].OK(), kind, object, withFix, reps[0].Problems)
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 100), "UPDATE accounts SET balance = 6 WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), string(kind)+" "+object) {
		t.Fatalf("fenced UPDATE with a %q door on %q: %v, want ErrSchema naming it", kind, object, err)
	}
	if !withFix {
		return doorFix
	}
	return reps[0].Fix
}

// fixRestores runs fix and checks that accounts is OK afterwards.
func fixRestores(t *testing.T, ctx context.Context, raw *sql.DB, fix []string) {
	t.Helper()
	testdb.Exec(t, raw, fix...)
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if !reps[0].OK() {
		t.Fatalf("after the Fix: problems %q", reps[0].Problems)
	}
}

// requireGuardDoor is requireDoor for any door of kind, followed by its Fix.
func requireGuardDoor(t *testing.T, ctx context.Context, raw *sql.DB, dsn string, kind dialect.SideDoorKind) {
	t.Helper()
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, kind, ""))
}

// tombAttack runs the tombstone attack through a new fenced pool: key 1 deleted under
// token 100, then each poke (under pokeToken, or with no token when it is 0), which
// fires the attacker's code, then the stale INSERT of key 1 under 90. After the Fix
// (fixed) the DELETE must succeed and the INSERT fail with ErrFenced; before it, the
// INSERT must fail with ErrFenced or the lazy check's ErrSchema.
func tombAttack(t *testing.T, ctx context.Context, dsn string, fixed bool, pokeToken uint64, pokes ...string) {
	t.Helper()
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "DELETE FROM accounts WHERE id = 1"); err != nil {
		if fixed {
			t.Fatalf("fenced DELETE after the Fix: %v", err)
		}
		t.Logf("fenced DELETE: %v", err)
	}
	pctx := ctx
	if pokeToken != 0 {
		pctx = fencedsql.WithToken(ctx, pokeToken)
	}
	for _, poke := range pokes {
		if _, err := db.ExecContext(pctx, poke); err != nil {
			if fixed {
				t.Fatalf("%s after the Fix: %v", poke, err)
			}
			t.Logf("%s: %v", poke, err)
		}
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 90), "INSERT INTO accounts (id, balance) VALUES (1, -1)")
	if !errors.Is(err, fencedsql.ErrFenced) && (fixed || !errors.Is(err, fencedsql.ErrSchema)) {
		t.Errorf("stale INSERT (token 90) of key 1 deleted under 100 (fixed %v): %v, want ErrFenced", fixed, err)
	}
}
