package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// A stale claim of an absent key is fenced on MySQL/MariaDB (red-team rt44e F2,
// absence recorder v2): a key whose tombstone holds a newer token than the claim's —
// deleted under it, or claimed absent under it — is the newer holder's; an older
// holder's claim fails with ErrFenced (a *FencedError with the claim's token), as the
// same claim of a row written under the newer token does. The transaction records
// nothing (its Commit fails) and the tombstone keeps its token; the claimer's equal
// token and newer ones still claim the key absent.

// staleAbsentMy makes key 20 of acc and ('eu', 20) of pair the newer holder's at 70.
func staleAbsentMy(t *testing.T, db *sql.DB, how string) {
	t.Helper()
	switch how {
	case "deleted under 70":
		for _, q := range []string{"INSERT INTO acc (id) VALUES (20)", "INSERT INTO pair (`Region`, n) VALUES ('eu', 20)"} {
			if err := writeAs(db, 50, q); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range []string{"DELETE FROM acc WHERE id = 20", "DELETE FROM pair WHERE `Region` = 'eu' AND n = 20"} {
			if err := writeAs(db, 70, q); err != nil {
				t.Fatal(err)
			}
		}
	case "claimed absent under 70":
		claimAbsentMy(t, db, 70, true, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 20)
		claimAbsentMy(t, db, 70, true, "SELECT n FROM pair WHERE `Region` = ? AND n = ? FOR UPDATE", "eu", 20)
	}
}

// fencedClaimMy claims under 60 with q and args and wants a *FencedError with token
// 60 and a Commit that fails.
func fencedClaimMy(t *testing.T, db *sql.DB, iso sql.IsolationLevel, q string, args ...any) {
	t.Helper()
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var id any
	err = tx.QueryRowContext(ctx, q, args...).Scan(&id)
	var fe *fencedsql.FencedError
	if !errors.Is(err, fencedsql.ErrFenced) || !errors.As(err, &fe) || fe.Token != 60 {
		t.Fatalf("%s under 60 of a key the holder of 70 owns: %v, want a *FencedError with token 60", q, err)
	}
	if err := tx.Commit(); err == nil {
		t.Fatal("the fenced claim's transaction committed")
	}
}

func TestMySQLStaleClaimOfAbsentKeyFenced(t *testing.T) {
	for _, how := range []string{"deleted under 70", "claimed absent under 70"} {
		t.Run(how, func(t *testing.T) {
			_, admin, db := absentMy(t)
			staleAbsentMy(t, db, how)
			for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable} {
				t.Run(iso.String(), func(t *testing.T) {
					fencedClaimMy(t, db, iso, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 20)
					fencedClaimMy(t, db, iso, "SELECT id FROM acc WHERE id = 20 LOCK IN SHARE MODE")
					fencedClaimMy(t, db, iso, "SELECT n FROM pair WHERE `Region` = ? AND n = ? FOR UPDATE", "eu", 20)
				})
			}
			if a, p := tombToken(t, admin, "acc", "id = 20"), tombToken(t, admin, "pair", "`Region` = 'eu' AND n = 20"); a != 70 || p != 70 {
				t.Fatalf("tombstones after the fenced claims: %d, %d, want 70", a, p)
			}
			claimAbsentMy(t, db, 70, true, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 20)
			claimAbsentMy(t, db, 70, true, "SELECT n FROM pair WHERE `Region` = ? AND n = ? FOR UPDATE", "eu", 20)
			if a := tombToken(t, admin, "acc", "id = 20"); a != 70 {
				t.Fatalf("tombstone after the equal claim: %d, want 70", a)
			}
			claimAbsentMy(t, db, 80, true, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 20)
			if a := tombToken(t, admin, "acc", "id = 20"); a != 80 {
				t.Fatalf("tombstone after the newer claim: %d, want 80", a)
			}
			if err := writeAs(db, 60, "INSERT INTO acc (id) VALUES (20)"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale INSERT after the claims: %v, want ErrFenced", err)
			}
		})
	}
}

// TestMySQLAbsenceRecorderUpgradedFromPrevious: a database whose recorder is an
// earlier version's (v1, no fence check; v2, no lookup of the key after the record)
// reports the tombstone guard as not installed, and not the recorder as a door (it is
// the guard's own); the Fix re-creates it, and the stale claim is fenced.
func TestMySQLAbsenceRecorderUpgradedFromPrevious(t *testing.T) {
	for _, v := range []int{1, 2} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { absenceRecorderUpgradedFrom(t, v) })
	}
}

func absenceRecorderUpgradedFrom(t *testing.T, v int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, admin, _ := absentMy(t)
	testdb.Exec(t, admin, mysql.PreviousAbsenceDDL(v, dialect.TableName{Name: "acc"}, []dialect.KeyColumn{{Name: "id", Type: "bigint(20)"}}, "fence_token")...)
	var comment string
	if err := admin.QueryRow("SELECT ROUTINE_COMMENT FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'fencedsql_tombclaim_acc'").Scan(&comment); err != nil || comment != fmt.Sprintf("fencedsql absence recorder v%d", v) {
		t.Fatalf("previous recorder not installed: %q %v", comment, err)
	}
	reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	recreated := false
	for _, r := range reports {
		for _, p := range r.Problems {
			if strings.Contains(p, "fencedsql_tombclaim_acc") {
				t.Errorf("the previous recorder reported as a door: %s", p)
			}
		}
		for _, s := range r.Fix {
			if strings.Contains(s, "CREATE PROCEDURE") && strings.Contains(s, "fencedsql_tombclaim_acc") {
				recreated = true
			}
		}
	}
	if !recreated {
		t.Fatalf("schema.Check over the previous recorder: %+v, want a Fix re-creating it", reports)
	}
	for _, r := range reports {
		testdb.Exec(t, admin, r.Fix...)
	}
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc,pair"))
	staleAbsentMy(t, db, "deleted under 70")
	fencedClaimMy(t, db, sql.LevelRepeatableRead, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 20)
}

// TestMySQLAbsenceRecorderRefusesNonStrictMode: a recorder created in a non-strict
// sql_mode (where its fence would store 0) refuses every record with the guard's error
// (a pool that judged the recorder before it was re-created reaches it); a pool that
// judges it after refuses the table (its SQL_MODE is not strict: a door, fix46k K2).
func TestMySQLAbsenceRecorderRefusesNonStrictMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, admin, db := absentMy(t)
	staleAbsentMy(t, db, "deleted under 70")
	conn, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stmts := append([]string{"SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION'"}, mysql.AbsenceDDL(dialect.TableName{Name: "acc"}, []dialect.KeyColumn{{Name: "id", Type: "bigint(20)"}}, "fence_token")...)
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(db *sql.DB) error {
		tctx := fencedsql.WithToken(ctx, 60)
		tx, err := db.BeginTx(tctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck
		var id int64
		return tx.QueryRowContext(tctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 20).Scan(&id)
	}
	if err := claim(db); !errors.Is(err, fencedsql.ErrGuard) || !strings.Contains(err.Error(), "non-strict") {
		t.Fatalf("claim through a non-strict recorder: %v, want the guard's refusal", err)
	}
	if err := claim(testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc,pair"))); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("claim on a pool opened after the non-strict recorder: %v, want the lazy check's ErrSchema", err)
	}
	if a := tombToken(t, admin, "acc", "id = 20"); a != 70 {
		t.Fatalf("tombstone: %d, want 70", a)
	}
}
