package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestMySQLAbsenceImpostorWithOwnBodyOtherParameters: a procedure of the recorder's
// name with its exact body and COMMENT but other parameters (fencedsql_k1 DOUBLE for a
// BIGINT key: the CALL's 2^53+1 recorded as 2^53; or the key and the token swapped)
// passed schema.Check as the guard's own (red-team rt45a F3). The side-door check
// compares the parameters with the catalog's key: it is reported, and the lazy check
// refuses the table.
func TestMySQLAbsenceImpostorWithOwnBodyOtherParameters(t *testing.T) {
	for _, c := range []struct {
		name, params  string
		key, recorded int64
	}{
		{"DoubleKeyParameter", "fencedsql_k1 DOUBLE, fencedsql_tok BIGINT", 9007199254740993, 9007199254740992},
		// Parameters swapped: the CALL's key lands in fencedsql_tok and its token in
		// fencedsql_k1 (the body is the same text).
		{"SwappedParameters", "fencedsql_tok BIGINT, fencedsql_k1 LONGTEXT CHARACTER SET utf8mb4", 20, 70},
	} {
		t.Run(c.name, func(t *testing.T) { absenceImpostor(t, c.params, c.key, c.recorded) })
	}
}

func absenceImpostor(t *testing.T, params string, key, recorded int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, admin, _ := absentMy(t)
	var body string
	if err := admin.QueryRow("SELECT ROUTINE_DEFINITION FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'fencedsql_tombclaim_acc'").Scan(&body); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, admin, "DROP PROCEDURE fencedsql_tombclaim_acc",
		"CREATE PROCEDURE fencedsql_tombclaim_acc("+params+") MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT '"+mysql.AbsenceMarker+"'\n"+body)
	reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, r := range reports {
		problems = append(problems, r.Problems...)
	}
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc,pair"))
	ctx70 := fencedsql.WithToken(ctx, 70)
	tx, err := db.BeginTx(ctx70, nil)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	claimErr := tx.QueryRowContext(ctx70, "SELECT id FROM acc WHERE id = ? FOR UPDATE", key).Scan(&id)
	commitErr := tx.Commit()
	_, insErr := admin.Exec("INSERT INTO acc (id, fence_token) VALUES (?, 60)", key)
	if !errors.Is(claimErr, fencedsql.ErrSchema) {
		t.Errorf("claim through the impostor: %v, want the lazy check's ErrSchema", claimErr)
	}
	if len(problems) == 0 {
		t.Fatalf("recorder replaced by one with the guard's body and parameters (%s): schema.Check reports nothing; claim of %d under 70: %v, commit %v; plain INSERT of %d under 60 afterwards: %v (tombstone of %d: %d, of %d: %d)",
			params, key, claimErr, commitErr, key, insErr, recorded, tombToken(t, admin, "acc", "id = ?", recorded), key, tombToken(t, admin, "acc", "id = ?", key))
	}
}

// TestMySQLAbsenceImpostorWithSwappedKeyList: a recorder whose INSERT names the key
// columns in the other order (`b`, `a` for PRIMARY KEY (a, b)) rebuilt the text
// ownAbsence expected from the list it read out of the body, and passed as the guard's
// own: the claim of (1, 2) recorded (2, 1) (red-team rt45a F3). The expected text is
// built from the catalog's key: schema.Check reports it.
func TestMySQLAbsenceImpostorWithSwappedKeyList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE ab (a INT NOT NULL, b INT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (a, b)) ENGINE=InnoDB")
	reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "ab"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		testdb.Exec(t, admin, r.Fix...)
	}
	var body string
	if err := admin.QueryRow("SELECT ROUTINE_DEFINITION FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'fencedsql_tombclaim_ab'").Scan(&body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "(`a`, `b`, fence_token") {
		t.Fatalf("unexpected recorder body %q", body)
	}
	body = strings.Replace(body, "(`a`, `b`, fence_token", "(`b`, `a`, fence_token", 1)
	testdb.Exec(t, admin, "DROP PROCEDURE fencedsql_tombclaim_ab",
		"CREATE PROCEDURE fencedsql_tombclaim_ab(fencedsql_k1 LONGTEXT CHARACTER SET utf8mb4, fencedsql_k2 LONGTEXT CHARACTER SET utf8mb4, fencedsql_tok BIGINT) MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT '"+mysql.AbsenceMarker+"'\n"+body)
	reports, err = schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "ab"})
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, r := range reports {
		problems = append(problems, r.Problems...)
	}
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=ab"))
	ctx70 := fencedsql.WithToken(ctx, 70)
	tx, err := db.BeginTx(ctx70, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var a int64
	claimErr := tx.QueryRowContext(ctx70, "SELECT a FROM ab WHERE a = ? AND b = ? FOR UPDATE", int64(1), int64(2)).Scan(&a)
	if !errors.Is(claimErr, fencedsql.ErrSchema) {
		t.Errorf("claim through the impostor: %v, want the lazy check's ErrSchema", claimErr)
	}
	tx.Rollback() //nolint:errcheck
	_, insErr := admin.Exec("INSERT INTO ab (a, b, fence_token) VALUES (1, 2, 60)")
	if len(problems) == 0 {
		t.Fatalf("recorder with the key list swapped: schema.Check reports nothing; after the claim of (1, 2) under 70 the tombstone of (2, 1) is %d, of (1, 2) %d; plain INSERT of (1, 2) under 60: %v",
			tombToken(t, admin, "ab", "a = 2 AND b = 1"), tombToken(t, admin, "ab", "a = 1 AND b = 2"), insErr)
	}
}
