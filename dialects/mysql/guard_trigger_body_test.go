package mysql_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// guardBodySetup: accounts with rows 1..3 under token 10, the guard and tombstones
// installed by schema.Check's fix, and a second Check that reports it all installed.
var guardBodyDSNs = map[*sql.DB]string{}

func guardBodyDSN(t *testing.T, db *sql.DB) string { return guardBodyDSNs[db] }

func guardBodySetup(t *testing.T) *sql.DB {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 10, 1), (2, 10, 1), (3, 10, 1)",
	)
	admin.SetMaxOpenConns(1)
	guardBodyDSNs[admin] = dsn
	reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		testdb.Exec(t, admin, r.Fix...)
	}
	if r := guardBodyReport(t, admin); !r.OK() || !r.Guarded || !r.Tombstoned {
		t.Fatalf("after the fix: %+v", r)
	}
	return admin
}

func guardBodyReport(t *testing.T, db *sql.DB) schema.TableReport {
	t.Helper()
	reps, err := schema.Check(context.Background(), db, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	return reps[0]
}

func guardBodyRun(t *testing.T, weaken, effect []string, tomb bool, what string) {
	t.Helper()
	admin := guardBodySetup(t)
	testdb.Exec(t, admin, weaken...)
	var through []string
	for _, q := range effect {
		if _, err := admin.ExecContext(context.Background(), q); err == nil {
			through = append(through, q)
		}
	}
	r := guardBodyReport(t, admin)
	flag := r.Guarded
	if tomb {
		flag = r.Tombstoned
	}
	if flag && r.OK() {
		t.Fatalf("%s: schema.Check still reports accounts as guarded (Guarded=%v Tombstoned=%v, no problem) while the weakened trigger let through %q; want it reported as not installed, with the Fix re-creating it", what, r.Guarded, r.Tombstoned, through)
	}
	testdb.Exec(t, admin, r.Fix...)
	if r := guardBodyReport(t, admin); !r.OK() {
		t.Fatalf("%s: after the Fix: %q", what, r.Problems)
	}
}

// MariaDB: TombstoneInstalledQuery checks the INSERT trigger by name, event and timing
// only, not its body. A trigger of the right name whose body does nothing (re-created
// by anyone with the TRIGGER privilege, which on MySQL/MariaDB includes DROP TRIGGER,
// or by a migration) leaves Check reporting the tombstone guard installed while a
// stale INSERT re-creates a key deleted under a newer token. Right: require the body
// (ACTION_STATEMENT) to be the one TombstoneDDL writes (or at least its tombstone
// lookup and refusal), as the DELETE and rekey triggers' bodies are matched.
func TestCheckReportsEmptiedTombstoneInsertTrigger(t *testing.T) {
	guardBodyRun(t, []string{
		"DROP TRIGGER fencedsql_tombins_accounts",
		"CREATE TRIGGER fencedsql_tombins_accounts AFTER INSERT ON accounts FOR EACH ROW BEGIN END",
	}, []string{
		"UPDATE accounts SET fence_token = 20, version = version + 1 WHERE id = 2",
		"DELETE FROM accounts WHERE id = 2",
		"INSERT INTO accounts (id, fence_token, version) VALUES (2, 5, 1)",
	}, true, "tombstone INSERT trigger with an empty body")
}

// MariaDB: GuardInstalledQuery accepts any BEFORE UPDATE trigger of the guard's name
// whose body contains the text "fencedsql_floor" anywhere — a string literal will do.
// Check reports the guard installed while an UPDATE lowering the token passes.
// Right: match the body GuardDDL writes (its refusals), not one substring.
func TestCheckReportsReplacedGuardTriggerBody(t *testing.T) {
	guardBodyRun(t, []string{
		"DROP TRIGGER fencedsql_guard_accounts",
		"CREATE TRIGGER fencedsql_guard_accounts BEFORE UPDATE ON accounts FOR EACH ROW SET @rt20g = 'fencedsql_floor'",
	}, []string{
		"UPDATE accounts SET fence_token = 1, balance = 666 WHERE id = 1",
	}, false, "guard trigger body replaced, the floor table's name in a string")
}

// MariaDB: the primary key's type changed with the guard in place (MariaDB tracks no
// dependency of a trigger on a column, so the ALTER goes through): ALTER TABLE
// accounts MODIFY id DECIMAL(10,1). The tombstone table keeps id BIGINT, so a DELETE
// of key 1.5 records a tombstone for 2 (rounded), and a stale INSERT of 1.5 (token 5)
// after the key was deleted under token 20 is accepted, while schema.Check reports
// the tombstone guard installed and OK (TombstoneInstalledQuery does not compare the
// tombstone table's key with the primary key). Right: Check reports the tombstone
// table whose key columns differ from the primary key's (COLUMN_TYPE, collation), with
// a Fix that rebuilds it; the stale INSERT fails (ErrFenced through the wrapper).
func TestCheckReportsTombstoneKeyTypeChange(t *testing.T) {
	ctx := context.Background()
	admin := guardBodySetup(t)
	testdb.Exec(t, admin, "ALTER TABLE accounts MODIFY id DECIMAL(10,1) NOT NULL")
	r := guardBodyReport(t, admin)
	if r.OK() {
		t.Fatalf("schema.Check reports OK after the key's type changed; want the tombstone table's key reported")
	}
	testdb.Exec(t, admin, r.Fix...)
	if r := guardBodyReport(t, admin); !r.OK() {
		t.Fatalf("after the Fix: %q", r.Problems)
	}
	testdb.Exec(t, admin,
		"INSERT INTO accounts (id, fence_token, version) VALUES (1.5, 20, 1)",
		"DELETE FROM accounts WHERE id = 1.5")
	_, err := admin.ExecContext(ctx, "INSERT INTO accounts (id, fence_token, version) VALUES (1.5, 5, 1)")
	if err == nil {
		t.Fatalf("after MODIFY id DECIMAL(10,1) (schema.Check: OK=%v Tombstoned=%v %q), a stale INSERT of key 1.5 (token 5) after its DELETE under token 20 was accepted; want it refused, and Check to report the tombstone table's stale key", r.OK(), r.Tombstoned, r.Problems)
	}
}

// MariaDB: ownTriggers skips every BEFORE trigger whose name starts with "fencedsql_"
// (TRIGGER_NAME NOT LIKE 'fencedsql\_%'), meant for the guard's own. A user trigger
// so named that puts the old token back in place of the fencing NULL (SET
// NEW.fence_token = IFNULL(NEW.fence_token, OLD.fence_token)), ordered before the
// guard (PRECEDES), is neither reported by schema.Check nor refused by the lazy check,
// and a stale UPDATE (token 5) of a row written under token 20 succeeds through the
// fenced pool, the guard installed. Right: skip only the guard's own triggers (exact
// names: fencedsql_guard_<table>, the floor trigger, the tombstone triggers), report
// this one; the stale UPDATE fails with ErrFenced (or the pool with ErrSchema).
func TestOwnTriggerNamedLikeGuardReported(t *testing.T) {
	ctx := context.Background()
	admin := guardBodySetup(t)
	testdb.Exec(t, admin, "CREATE TRIGGER fencedsql_keep_token BEFORE UPDATE ON accounts FOR EACH ROW PRECEDES fencedsql_guard_accounts SET NEW.fence_token = IFNULL(NEW.fence_token, OLD.fence_token)")
	r := guardBodyReport(t, admin)
	if r.OK() {
		t.Fatal("schema.Check reports OK; want the trigger reported")
	}
	testdb.Exec(t, admin, "UPDATE accounts SET fence_token = 20, version = version + 1 WHERE id = 1")
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(guardBodyDSN(t, admin), "fenced_tables=accounts"))
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 666 WHERE id = 1")
	var bal int64
	if err := admin.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil {
		t.Fatal(err)
	}
	if bal == 666 {
		t.Fatalf("a stale UPDATE (token 5) of a row written under token 20 went through the fenced pool (err = %v) past a BEFORE trigger named fencedsql_…; schema.Check: OK=%v %q; want the trigger reported and the write refused", err, r.OK(), r.Problems)
	}
}
