package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A claim of an absent key on MySQL/MariaDB (docs/design.md G10, red-team rt42e F1):
// SELECT … FOR UPDATE that pins the whole primary key and finds no row records
// "absence claimed at token t" in the table's tombstones through the tombstone guard's
// recorder (fencedsql_tombclaim_<table>), so an older holder's later INSERT, upsert or
// REPLACE of that key is refused (ErrFenced), while the claimer itself and newer
// holders create it. Before, the claim claimed nothing and the stale write landed
// under its older token.

// absentMy creates acc (integer key) and pair (a string and an integer key) with the
// guards and the tombstone guard installed (schema.Check's fix), and returns the
// database's DSN, an admin pool and a fenced pool on both tables.
func absentMy(t testing.TB) (dsn string, admin, db *sql.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn = testdb.MySQL(t)
	admin = testdb.Open(t, "mysql", dsn,
		"CREATE TABLE acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE pair (`Region` VARCHAR(8) NOT NULL, n INT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (`Region`, n)) ENGINE=InnoDB")
	reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "acc"}, schema.GuardSpec{Table: "pair"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		testdb.Exec(t, admin, r.Fix...)
	}
	db = testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc,pair"))
	return dsn, admin, db
}

// claimAbsentMy claims under tok with query and args in a transaction, wants no row,
// and commits (or rolls back).
func claimAbsentMy(t *testing.T, db *sql.DB, tok uint64, commit bool, query string, args ...any) {
	t.Helper()
	ctx := fencedsql.WithToken(context.Background(), tok)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var id any
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("%s: %v, want sql.ErrNoRows", query, err)
	}
	if commit {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

func writeAs(db *sql.DB, tok uint64, query string, args ...any) error {
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), tok), query, args...)
	return err
}

// tombToken is the token of key's tombstone in acc's tombstone table (0: none).
func tombToken(t *testing.T, admin *sql.DB, table, where string, args ...any) int64 {
	t.Helper()
	var tok int64
	err := admin.QueryRow("SELECT fence_token FROM fencedsql_tomb_"+table+" WHERE "+where, args...).Scan(&tok)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return tok
}

func TestMySQLClaimOfAbsentKeyFencesOlderWrites(t *testing.T) {
	_, admin, db := absentMy(t)
	claimAbsentMy(t, db, 60, true, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 7)
	for _, w := range []string{
		"INSERT INTO acc (id) VALUES (7)",
		"INSERT INTO acc (id) VALUES (7) ON DUPLICATE KEY UPDATE balance = 1",
	} {
		if err := writeAs(db, 40, w); !errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("%s under token 40 of a key claimed absent under 60: %v, want ErrFenced", w, err)
		}
	}
	// The wrapper refuses REPLACE on a guarded table; written on a plain connection
	// with the older token, the tombstone guard refuses it.
	if _, err := admin.Exec("REPLACE INTO acc (id, fence_token) VALUES (7, 40)"); err == nil || !strings.Contains(err.Error(), "cannot be null") {
		t.Fatalf("REPLACE under token 40 of a key claimed absent under 60: %v, want the tombstone guard's refusal", err)
	}
	if got := tombToken(t, admin, "acc", "id = 7"); got != 60 {
		t.Fatalf("tombstone of 7: token %d, want 60", got)
	}
	// The claimer's own INSERT (equal token) goes through; so does a newer holder's.
	if err := writeAs(db, 60, "INSERT INTO acc (id) VALUES (7)"); err != nil {
		t.Fatalf("the claimer's own INSERT (token 60): %v", err)
	}
	claimAbsentMy(t, db, 70, true, "SELECT id FROM acc WHERE id = 8 FOR UPDATE")
	if err := writeAs(db, 80, "INSERT INTO acc (id) VALUES (8)"); err != nil {
		t.Fatalf("a newer holder's INSERT (token 80): %v", err)
	}
	// A record only ever raises: an older claim of 9 is fenced (rt44e F2) and leaves
	// 90 there.
	claimAbsentMy(t, db, 90, true, "SELECT id FROM acc WHERE id = 9 FOR UPDATE")
	fencedClaimMy(t, db, sql.LevelDefault, "SELECT id FROM acc WHERE id = 9 FOR UPDATE")
	if got := tombToken(t, admin, "acc", "id = 9"); got != 90 {
		t.Fatalf("tombstone of 9 after claims under 90 then 60: token %d, want 90", got)
	}
	// The recorder called by hand with a lower token is refused; with NULLs it records
	// nothing: neither lowers anything.
	if _, err := admin.Exec("CALL fencedsql_tombclaim_acc(9, 1)"); err == nil || !strings.Contains(err.Error(), "cannot be null") {
		t.Fatalf("recorder called with a lower token: %v, want the fence's refusal", err)
	}
	testdb.Exec(t, admin, "CALL fencedsql_tombclaim_acc(9, NULL)", "CALL fencedsql_tombclaim_acc(NULL, 1)")
	if got := tombToken(t, admin, "acc", "id = 9"); got != 90 {
		t.Fatalf("tombstone of 9 after lower calls: token %d, want 90", got)
	}
}

// TestMySQLClaimOfAbsentKeySpellings: the spellings of a pinned key record; a claim
// that does not pin the whole key, or finds its row, records nothing.
func TestMySQLClaimOfAbsentKeySpellings(t *testing.T) {
	_, admin, db := absentMy(t)
	testdb.Exec(t, admin, "INSERT INTO pair (`Region`, n, fence_token) VALUES ('us', 1, 5)")
	for _, c := range []struct {
		query string
		args  []any
	}{
		{"SELECT n FROM pair WHERE `Region` = ? AND n = ? FOR UPDATE", []any{"eu", 1}},
		{"SELECT n FROM pair WHERE ? = n AND region = ? FOR UPDATE", []any{2, "eu"}},
		{"SELECT n FROM pair p WHERE (p.n = 3 AND (p.`Region` = 'eu')) AND balance >= 0 FOR UPDATE", nil},
		{"SELECT n FROM pair WHERE pair.REGION = 'eu' AND `pair`.`n` = ? FOR UPDATE", []any{4}},
	} {
		claimAbsentMy(t, db, 60, true, c.query, c.args...)
	}
	for n := 1; n <= 4; n++ {
		if got := tombToken(t, admin, "pair", "`Region` = 'eu' AND n = ?", n); got != 60 {
			t.Errorf("tombstone of (eu, %d): token %d, want 60", n, got)
		}
		// The key's collation is the table's: 'EU' is the key 'eu' claimed.
		if err := writeAs(db, 40, "INSERT INTO pair (`Region`, n) VALUES ('EU', ?)", n); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("INSERT (EU, %d) under 40: %v, want ErrFenced", n, err)
		}
	}
	// Not pinned: part of the key, a range, an OR, a string against the integer, a
	// NULL; and a claim that finds its row.
	for _, c := range []struct {
		query string
		args  []any
	}{
		{"SELECT n FROM pair WHERE `Region` = 'fr' FOR UPDATE", nil},
		{"SELECT n FROM pair WHERE `Region` = 'fr' AND n > 5 FOR UPDATE", nil},
		{"SELECT n FROM pair WHERE `Region` = 'fr' AND (n = 5 OR n = 6) FOR UPDATE", nil},
		{"SELECT n FROM pair WHERE `Region` = 'fr' AND n = '5' FOR UPDATE", nil},
		{"SELECT n FROM pair WHERE `Region` = ? AND n = 5 FOR UPDATE", []any{nil}},
	} {
		claimAbsentMy(t, db, 60, true, c.query, c.args...)
	}
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT n FROM pair WHERE `Region` = 'us' AND n = 1 FOR UPDATE").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var count int
	if err := admin.QueryRow("SELECT COUNT(*) FROM fencedsql_tomb_pair WHERE `Region` <> 'eu'").Scan(&count); err != nil || count != 0 {
		t.Fatalf("tombstones of keys not pinned or found: %d (%v), want 0", count, err)
	}
}

// TestMySQLClaimOfAbsentKeyRolledBackRecordsNothing: the record is in the claim's
// transaction; a rollback, or a rollback to a savepoint taken before the claim, takes
// it with it.
func TestMySQLClaimOfAbsentKeyRolledBackRecordsNothing(t *testing.T) {
	_, admin, db := absentMy(t)
	claimAbsentMy(t, db, 60, false, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 7)
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "SAVEPOINT before_claim"); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 8).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT before_claim"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{7, 8} {
		if got := tombToken(t, admin, "acc", "id = ?", k); got != 0 {
			t.Errorf("tombstone of %d after a rolled-back claim: token %d, want none", k, got)
		}
		if err := writeAs(db, 40, "INSERT INTO acc (id) VALUES (?)", k); err != nil {
			t.Errorf("INSERT of %d under 40 after a rolled-back claim: %v", k, err)
		}
	}
}

// TestMySQLClaimOfAbsentKeyRacingInsert: an older holder's INSERT of the key sent
// while the claim's transaction is open waits for it (the record's uncommitted
// tombstone row, InnoDB's lock on the absent key) and is refused once it commits.
func TestMySQLClaimOfAbsentKeyRacingInsert(t *testing.T) {
	_, _, db := absentMy(t)
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var id int64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 7).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- writeAs(db, 40, "INSERT INTO acc (id) VALUES (7)") }()
	select {
	case err := <-done:
		t.Fatalf("the older INSERT did not wait for the claim's transaction: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("older INSERT racing the claim: %v, want ErrFenced", err)
	}
}

// TestMySQLTombstoneGuardWithoutRecorderNotInstalled: a tombstone guard without its
// recorder (one installed before it) is reported not installed, and the Fix
// re-creates the recorder.
func TestMySQLTombstoneGuardWithoutRecorderNotInstalled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, admin, _ := absentMy(t)
	testdb.Exec(t, admin, "DROP PROCEDURE fencedsql_tombclaim_acc")
	reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	fixed := false
	for _, r := range reports {
		for _, s := range r.Fix {
			if strings.Contains(s, "CREATE PROCEDURE") && strings.Contains(s, "fencedsql_tombclaim_acc") {
				fixed = true
			}
		}
		testdb.Exec(t, admin, r.Fix...)
	}
	if !fixed {
		t.Fatalf("schema.Check without the recorder: reports %+v, want a Fix re-creating it", reports)
	}
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'fencedsql_tombclaim_acc'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("recorder after the Fix: %d (%v)", n, err)
	}
}

// TestMySQLRecorderImpostorIsADoor: the recorder is the guard's own by its exact text;
// a procedure of its name with another body (here one that lowers tombstones) is
// judged as a user's routine writing the tombstone table.
func TestMySQLRecorderImpostorIsADoor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, admin, _ := absentMy(t)
	doors := func() []string {
		reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range reports {
			for _, p := range r.Problems {
				if strings.Contains(p, "fencedsql_tombclaim_acc") {
					out = append(out, p)
				}
			}
		}
		return out
	}
	if d := doors(); len(d) != 0 {
		t.Fatalf("the guard's own recorder reported: %v", d)
	}
	testdb.Exec(t, admin, "DROP PROCEDURE fencedsql_tombclaim_acc",
		"CREATE PROCEDURE fencedsql_tombclaim_acc(fencedsql_k1 LONGTEXT CHARACTER SET utf8mb4, fencedsql_tok BIGINT) MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT 'fencedsql absence recorder v1'\n"+
			"BEGIN\n  UPDATE `fencedsql_tomb_acc` SET fence_token = 0;\nEND")
	if d := doors(); len(d) == 0 {
		t.Fatal("an impostor recorder is not reported")
	}
}

// BenchmarkClaimOfAbsentKey: a claim that finds its row, one that finds none (and
// records the key's absence: one CALL more), and one that finds none on a table whose
// tombstone guard was removed (a pool opened after: the claim's statements without the
// record; a table whose recorder alone is missing refuses the claim), each in its own
// transaction, rolled back.
func BenchmarkClaimOfAbsentKey(b *testing.B) {
	dsn, admin, db := absentMy(b)
	tctx := fencedsql.WithToken(context.Background(), 5)
	if _, err := db.ExecContext(tctx, "INSERT INTO acc (id) VALUES (1)"); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, db *sql.DB, id int64) {
		for i := 0; i < b.N; i++ {
			tx, err := db.BeginTx(tctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			var got int64
			if err := tx.QueryRowContext(tctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", id).Scan(&got); err != nil && !errors.Is(err, sql.ErrNoRows) {
				b.Fatal(err)
			}
			if err := tx.Rollback(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("found", func(b *testing.B) { run(b, db, 1) })
	b.Run("absent", func(b *testing.B) { run(b, db, 2) })
	testdb.Exec(b, admin, mysql.Dialect.(dialect.Tombstoner).UntombstoneDDL(dialect.TableName{Name: "acc"})...)
	unrecorded := testdb.Open(b, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc,pair"))
	b.Run("absent-unrecorded", func(b *testing.B) { run(b, unrecorded, 2) })
}
