package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// sessionOracles runs, on a fresh database, the session oracles under param, DSN
// parameters (session variables go-sql-driver sends as SET at connect): schema.Check through a
// plain pool with the variable finds the installed guard healthy, an absent-key claim
// is recorded at the claimer's token, a DELETE's tombstone is dated now and survives
// a purge with an hour's retention, and the stale writes after each are refused.
// Unless served is set, a typed refusal of the session (a *SessionError) is accepted
// in place of all that (red-team rt52b).
func sessionOracles(t *testing.T, param string, served bool) {
	ctx := context.Background()
	dsn, admin, _ := absentMy(t)
	testdb.Exec(t, admin, "INSERT INTO acc (id, balance, fence_token) VALUES (1, 1, 5)")
	setDSN := fencetest.WithParam(dsn, param)
	plain := testdb.Open(t, "mysql", setDSN)
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc,pair&"+param))
	reps, err := schema.Check(ctx, plain, mysql.Dialect, schema.GuardSpec{Table: "acc"}, schema.GuardSpec{Table: "pair"})
	if err != nil && (served || !cfgmTyped(err)) {
		t.Errorf("schema.Check under %s: %v", param, err)
	}
	for _, r := range reps {
		if !r.OK() {
			t.Errorf("schema.Check under %s reports the installed guard of %s: %v", param, r.Table, r.Problems)
			for _, f := range r.Fix {
				t.Logf("  proposed fix: %.300s", f)
			}
		}
	}
	if err := writeAs(db, 6, "UPDATE acc SET balance = 6 WHERE id = 1"); err != nil {
		if cfgmTyped(err) && !served {
			t.Logf("session refused: %v", err)
			return
		}
		t.Fatalf("newer UPDATE: untyped %v", err)
	}
	// Absent-key claim.
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 9), nil)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	err = tx.QueryRowContext(fencedsql.WithToken(ctx, 9), "SELECT id FROM acc WHERE id = 50 FOR UPDATE").Scan(&id)
	if !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("claim of absent key 50: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("claim commit: %v", err)
	}
	if tok := tombToken(t, admin, "acc", "id = 50"); tok != 9 {
		t.Errorf("absence of key 50 recorded at token %d, want 9", tok)
	}
	if err := writeAs(db, 8, "INSERT INTO acc (id, balance) VALUES (50, 8)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("token 8's INSERT of key 50 claimed absent at 9: %v, want ErrFenced", err)
	}
	// DELETE, tombstone clock, purge, stale re-insert.
	if err := writeAs(db, 10, "DELETE FROM acc WHERE id = 1"); err != nil {
		t.Fatalf("DELETE under 10: %v", err)
	}
	var age int64
	if err := admin.QueryRow("SELECT TIMESTAMPDIFF(SECOND, deleted_at, UTC_TIMESTAMP()) FROM fencedsql_tomb_acc WHERE id = 1").Scan(&age); err != nil || age < -60 || age > 60 {
		t.Errorf("tombstone of key 1 is %d s old (%v), want dated now", age, err)
	}
	if tok := tombToken(t, admin, "acc", "id = 1"); tok != 10 {
		t.Errorf("tombstone of key 1 at token %d, want 10", tok)
	}
	if n, err := schema.PurgeTombstones(ctx, plain, mysql.Dialect, time.Hour, "acc"); n != 0 || (err != nil && !cfgmTyped(err)) {
		t.Errorf("PurgeTombstones(1h) under %s: %d, %v; want 0", param, n, err)
	}
	if err := writeAs(db, 9, "INSERT INTO acc (id, balance) VALUES (1, 9)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("token 9's INSERT of key 1 deleted at 10: %v, want ErrFenced", err)
	}
	// A plain write (no wrapper) is refused by the guard trigger.
	if _, err := plain.Exec("UPDATE acc SET balance = 0 WHERE id = 50"); err == nil {
		var n int
		_ = admin.QueryRow("SELECT COUNT(*) FROM acc WHERE id = 50").Scan(&n)
		if n > 0 {
			t.Errorf("plain UPDATE under %s went through", param)
		}
	}
	if err := writeAs(db, 11, "INSERT INTO acc (id, balance) VALUES (1, 11)"); err != nil {
		t.Errorf("newer holder's INSERT of key 1 under %s: %v (over-refusal)", param, err)
	}
}

// Session settings the session check accepts, under which the oracles hold (red-team
// rt52b's sweep, several settings a run): time zones far from UTC, the isolation
// levels, the sql_mode flags that do not change lexing, and the variables that change
// what a read may return (max_recursive_iterations: catalogsession.go).
func TestSessionOraclesHeld(t *testing.T) {
	for _, p := range []string{
		"time_zone='%2B13:00'", "tx_isolation='READ-UNCOMMITTED'",
		"sql_mode='TRADITIONAL,PIPES_AS_CONCAT,HIGH_NOT_PRECEDENCE,IGNORE_SPACE,SIMULTANEOUS_ASSIGNMENT,PAD_CHAR_TO_FULL_LENGTH,TIME_ROUND_FRACTIONAL,NO_FIELD_OPTIONS,NO_KEY_OPTIONS,NO_TABLE_OPTIONS,NO_DIR_IN_CREATE'",
		"tx_isolation='SERIALIZABLE'&sql_auto_is_null=1&foreign_key_checks=0&unique_checks=0&check_constraint_checks=0&max_sort_length=8&group_concat_max_len=4",
		"time_zone='-12:59'&innodb_lock_wait_timeout=1&big_tables=1&optimizer_switch='derived_merge=off,in_to_exists=off'&max_recursive_iterations=0&character_set_connection='latin1'",
	} {
		t.Run(p, func(t *testing.T) { sessionOracles(t, p, true) })
	}
}
