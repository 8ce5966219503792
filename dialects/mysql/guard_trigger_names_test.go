package mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func triggerNamesSetup(t *testing.T, table, create string) (*sql.DB, string) {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn, create,
		"INSERT INTO "+table+" (id, fence_token, version) VALUES (1, 10, 1), (2, 10, 1), (3, 10, 1)")
	admin.SetMaxOpenConns(1)
	reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		testdb.Exec(t, admin, r.Fix...)
	}
	return admin, dsn
}

func triggerNamesReport(t *testing.T, db *sql.DB, table string) schema.TableReport {
	t.Helper()
	reps, err := schema.Check(context.Background(), db, mysql.Dialect, schema.GuardSpec{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	return reps[0]
}

// Over-refusal (and a Fix that removes the guard). A table whose name is 49..64
// characters long gets guard/tombstone triggers whose names are cut and hashed
// (boundedTrigger). guardTriggerTable claims the comment "a hashed name has no
// recoverable table name", but it only checks boundedTrigger(prefix, rest) == name,
// which always holds for a name of <= 64 characters, so it "recovers" the cut name
// (e.g. "a_very_long…_1a2b3c4d") as the table the triggers were installed for.
// guardTriggers then compares the legit guard's body with the DDL for that bogus
// table, finds it different, and reports the freshly installed guard as a door whose
// Fix is DROP TRIGGER (the "renamed table" branch). schema.Check never reports OK,
// the lazy check refuses every fenced write, and applying the Fix drops the guard.
// Right: a legitimately installed guard on a long-named table is OK; the hashed names
// are matched by computing boundedTrigger(prefix, t.Table.Name).
func TestLongTableNameGuardNotReportedAsDoor(t *testing.T) {
	ctx := context.Background()
	table := "accounts_with_a_rather_long_descriptive_name_for_tests_x" // 56 chars
	admin, dsn := triggerNamesSetup(t, table, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	r := triggerNamesReport(t, admin, table)
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables="+table))
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE "+table+" SET balance = 1 WHERE id = 1")
	if !r.OK() || err != nil {
		t.Fatalf("[over-refusal] guard freshly installed by schema.Check's Fix on a %d-character table: Check OK=%v Guarded=%v Tombstoned=%v problems=%q fix=%q; fenced UPDATE err=%v; want OK and the write accepted",
			len(table), r.OK(), r.Guarded, r.Tombstoned, r.Problems, r.Fix, err)
	}
}

// Fail-open (lazy check). The lazy check (triggerdoor.go) passes no PrimaryKey, so
// ownTriggerBodies knows no tombstone triggers; a trigger whose name carries a
// tombstone prefix (fencedsql_tombkey_…) is skipped by ownTriggers ("one of the
// guard's names") and by guardTriggers ("not to be judged here"). A BEFORE UPDATE
// trigger named fencedsql_tombkey_accounts2 on accounts that puts the old token back
// (IFNULL(NEW.fence_token, OLD.fence_token)), ordered before the guard, lets a stale
// holder's UPDATE through the fenced pool. Right: the lazy check refuses the table
// (a trigger named like the guard's but not one of t's own installed triggers — wrong
// timing, wrong table suffix, wrong body — is a door, or is judged by ownTriggers).
func TestTombNamedTriggerRefusedByLazyCheck(t *testing.T) {
	ctx := context.Background()
	admin, dsn := triggerNamesSetup(t, "accounts", "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	testdb.Exec(t, admin,
		"CREATE TRIGGER fencedsql_tombkey_accounts2 BEFORE UPDATE ON accounts FOR EACH ROW PRECEDES fencedsql_guard_accounts SET NEW.fence_token = IFNULL(NEW.fence_token, OLD.fence_token)",
		"UPDATE accounts SET fence_token = 20, version = version + 1 WHERE id = 1")
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 666 WHERE id = 1")
	var bal int64
	if err := admin.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil {
		t.Fatal(err)
	}
	if bal == 666 {
		t.Fatalf("[fail-open] a stale UPDATE (token 5) of a row written under token 20 went through the fenced pool (err=%v) past a BEFORE UPDATE trigger named fencedsql_tombkey_accounts2 that restores the token; want the lazy check to refuse (ErrSchema) or ErrFenced", err)
	}
}

// Fail-open (schema.Check and lazy check). A guarded table without a primary key has
// no tombstone guard, so no PrimaryKey reaches ownTriggerBodies, and a trigger named
// fencedsql_tombins_<table> is judged by neither ownTriggers (skipped by name) nor
// guardTriggers (no body to compare with). A BEFORE UPDATE trigger of that name that
// restores the old token ahead of the guard: schema.Check reports the table OK and a
// stale holder's UPDATE goes through. Right: Check reports the trigger (a door with
// DROP TRIGGER as Fix); the stale UPDATE is refused.
func TestTombNamedTriggerWithoutPrimaryKeyReported(t *testing.T) {
	ctx := context.Background()
	admin, dsn := triggerNamesSetup(t, "accounts", "CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	if r := triggerNamesReport(t, admin, "accounts"); !r.Guarded {
		t.Fatalf("setup: %+v", r)
	}
	testdb.Exec(t, admin,
		"CREATE TRIGGER fencedsql_tombins_accounts BEFORE UPDATE ON accounts FOR EACH ROW PRECEDES fencedsql_guard_accounts SET NEW.fence_token = IFNULL(NEW.fence_token, OLD.fence_token)",
		"UPDATE accounts SET fence_token = 20, version = version + 1 WHERE id = 1")
	r := triggerNamesReport(t, admin, "accounts")
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 666 WHERE id = 1")
	var bal int64
	if err := admin.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil {
		t.Fatal(err)
	}
	reported := strings.Contains(strings.Join(r.Problems, " "), "fencedsql_tombins_accounts")
	if bal == 666 || !reported {
		t.Fatalf("[fail-open] table without primary key, BEFORE UPDATE trigger fencedsql_tombins_accounts restoring the token: schema.Check reports the trigger=%v problems=%q; stale UPDATE (token 5 < 20) err=%v balance=%d; want the trigger reported and the write refused", reported, r.Problems, err, bal)
	}
}

// Over-refusal (regression of the whole-body comparison). MySQL/MariaDB column
// names are case-insensitive, and the wrapper treats them so, but guardTriggers
// compares the installed body byte for byte with the DDL rebuilt from the lazy
// check's column names. A table whose column is declared Fence_Token, guarded by
// schema.Check with TokenColumn "Fence_Token" (Check: OK), is refused by a pool
// configured with the default fence_token (same column): the guard is "a changed
// guard", and the Fix the pool prints re-creates it in the other spelling — after
// which schema.Check with the installer's spelling reports it changed in turn.
// Right: compare identifiers case-insensitively (or compare against the column
// names read from the catalog), accept the installed guard in both spellings.
func TestColumnCaseGuardNotReportedAsDoor(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, Fence_Token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 10, 1)")
	admin.SetMaxOpenConns(1)
	spec := schema.GuardSpec{Table: "accounts", TokenColumn: "Fence_Token"}
	reps, err := schema.Check(ctx, admin, mysql.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, admin, reps[0].Fix...)
	if reps, _ = schema.Check(ctx, admin, mysql.Dialect, spec); !reps[0].OK() {
		t.Fatalf("setup: %q", reps[0].Problems)
	}
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, err = fenced.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 1 WHERE id = 1")
	if err != nil {
		t.Fatalf("[over-refusal] guard installed for column Fence_Token (schema.Check OK); a pool with the default token column fence_token (the same column) refuses: %.300s…; want the write accepted", err)
	}
}

// Fail-open (drift that compares equal). tombstoneKey compares the tombstone table's
// key columns by name, COLUMN_TYPE, collation and place in the PRIMARY KEY
// (KEY_COLUMN_USAGE), not the index's prefix length (STATISTICS.SUB_PART). A
// tombstone table whose PRIMARY KEY became a prefix key, PRIMARY KEY (id(5)), passes
// as the table's key: schema.Check reports OK. But the record's ON DUPLICATE KEY
// UPDATE then merges the tombstones of 'alice1' and 'alice2' into the row of
// 'alice1', and the INSERT check (t.id = NEW.id) finds no tombstone for 'alice2': a
// stale holder re-inserts a key deleted under a newer token. Right: the tombstone's
// key must be the full columns (SUB_PART IS NULL), else a door whose Fix rebuilds it.
func TestTombstoneKeyPrefixIndexReported(t *testing.T) {
	ctx := context.Background()
	admin, _ := triggerNamesSetup(t, "accounts", "CREATE TABLE accounts (id VARCHAR(20) NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	testdb.Exec(t, admin,
		"ALTER TABLE fencedsql_tomb_accounts DROP PRIMARY KEY, ADD PRIMARY KEY (id(5))",
		"INSERT INTO accounts (id, fence_token, version) VALUES ('alice1', 30, 1), ('alice2', 30, 1)",
		"DELETE FROM accounts WHERE id = 'alice1'",
		"DELETE FROM accounts WHERE id = 'alice2'")
	r := triggerNamesReport(t, admin, "accounts")
	_, err := admin.ExecContext(ctx, "INSERT INTO accounts (id, fence_token, version) VALUES ('alice2', 5, 1)")
	if err == nil && r.OK() {
		t.Fatalf("[fail-open] tombstone PRIMARY KEY made a prefix key (id(5)): schema.Check OK=%v Tombstoned=%v, and a stale INSERT of 'alice2' (token 5) after its DELETE under token 30 was accepted; want the tombstone key reported and the INSERT refused", r.OK(), r.Tombstoned)
	}
}
