package fencetest

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// testDeleteFence holds the one-statement fenced DELETE (dialect.DeleteFencer) to what
// the two-statement form guarantees, on a table with the documented set-up (schema.Check's
// Fix: row guard and tombstone guard):
//
//   - it is one statement: the DELETE updates no row (the two-statement form's fencing
//     UPDATE would), and it needs no transaction;
//   - it fails with ErrFenced, deleting nothing, when one of its rows carries a newer
//     token (or NULL-free older rows are mixed with it), with ErrBelowFloor under the
//     token floor, and reports the rows it deleted;
//   - the tombstone records the deleter's token, not the older token the row carried:
//     a holder between the two cannot re-insert the key (G9), also when one statement
//     deletes rows of its own token and of older ones;
//   - the fence is the database's, not the triggers': with the triggers disabled it
//     still refuses a newer row (PostgreSQL);
//   - a function of the fence's name earlier on the search_path does not count
//     (PostgreSQL);
//   - after the one-statement DELETE, a plain DELETE in a later statement of the same
//     transaction is refused by the row guard (PostgreSQL: the mark is its statement's),
//     whatever row it deletes, and so is one after the transaction;
//   - the guard removed under a pool that chose the one-statement form: outside a
//     transaction the DELETE is sent again as two statements and deletes; in a
//     caller's transaction it fails (nothing deleted) and the next runs as two.
func (s *guardSuite) testDeleteFence(t *testing.T) {
	e := s.oneStatementEnv(t)
	spec := schema.GuardSpec{Table: "accounts"}
	del := e.q("DELETE FROM accounts WHERE id = ?")

	// One statement, in a caller's transaction: no row updated.
	tx, err := e.db.BeginTx(tok(e.ctx, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	before := s.rowUpdates(e, tx)
	res, err := tx.ExecContext(e.ctx, del, 1)
	if err != nil {
		t.Fatalf("fenced DELETE: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("RowsAffected = %d, want 1", n)
	}
	if after := s.rowUpdates(e, tx); after != before {
		t.Fatalf("the DELETE updated %d rows: it ran as two statements", after-before)
	}
	tx.Rollback()
	if s.b.Name == "postgres" {
		// After the one-statement DELETE (as the wrapper sends it, fence and mark), in
		// a later statement of the same transaction: a plain DELETE of a row below the
		// token, of a newer row, of another guarded table — all refused (a floor raised
		// or a lease lost between the statements would not be seen); after the
		// transaction too.
		execAll(t, e.ctx, e.raw, append([]string{"CREATE TABLE others (id bigint PRIMARY KEY, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
			"INSERT INTO others (id, fence_token, version) VALUES (1, 5, 1)"},
			s.d.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "others"}, "fence_token", "version")...))
		if _, err := e.raw.ExecContext(e.ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (30, 0, 30, 1)"); err != nil {
			t.Fatal(err)
		}
		mark, _ := s.d.(dialect.DeleteFencer).DeleteFence(dialect.TableName{Name: "accounts"}, "fence_token")
		oneStep := "DELETE FROM accounts WHERE id = $1 AND " + strings.ReplaceAll(mark, dialect.TokenSlot, "$2")
		for _, c := range []struct{ what, plain string }{
			{"plain DELETE of a row below the token, same transaction", "DELETE FROM accounts WHERE id = 2"},
			{"plain DELETE of a row of a newer token, same transaction", "DELETE FROM accounts WHERE id = 30"},
			{"plain DELETE of another guarded table, same transaction", "DELETE FROM others WHERE id = 1"},
		} {
			rtx, err := e.raw.BeginTx(e.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rtx.ExecContext(e.ctx, oneStep, 1, 20); err != nil {
				t.Fatalf("the one-statement DELETE on the plain pool: %v", err)
			}
			_, err = rtx.ExecContext(e.ctx, c.plain)
			s.wantGuard(t, err, c.what)
			rtx.Rollback()
		}
		if _, err := e.raw.ExecContext(e.ctx, oneStep, 1, 20); err != nil {
			t.Fatalf("the one-statement DELETE on the plain pool, autocommit: %v", err)
		}
		_, err = e.raw.ExecContext(e.ctx, "DELETE FROM accounts WHERE id = 2")
		s.wantGuard(t, err, "plain DELETE after a one-statement DELETE's transaction")
		// Back as it was: row 1 (its tombstone first), no row 30.
		execAll(t, e.ctx, e.raw, []string{"DROP TABLE others"})
		if _, err := e.raw.ExecContext(e.ctx, "DELETE FROM fencedsql_tomb_accounts WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.raw.ExecContext(e.ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.ExecContext(tok(e.ctx, 30), del, 30); err != nil {
			t.Fatal(err)
		}
		if _, err := e.raw.ExecContext(e.ctx, "DELETE FROM fencedsql_tomb_accounts WHERE id = 30"); err != nil {
			t.Fatal(err)
		}
	}

	// Autocommit, several rows: the count is the rows deleted.
	res, err = e.db.ExecContext(tok(e.ctx, 20), e.q("DELETE FROM accounts WHERE id IN (?, ?)"), 1, 2)
	if err != nil {
		t.Fatalf("fenced DELETE of two rows: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 2 || e.count() != 6 {
		t.Fatalf("RowsAffected = %d, %d rows left; want 2, 6", n, e.count())
	}
	// Resurrection under a token between the row's (5) and the deleter's (20).
	_, err = e.db.ExecContext(tok(e.ctx, 10), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 1, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := e.db.ExecContext(tok(e.ctx, 20), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 2, 1); err != nil {
		t.Fatalf("the deleter re-inserts: %v", err)
	}
	// One statement deleting a row written under its own token and one written under
	// an older token: both tombstones hold the deleter's token.
	ins := e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)")
	for _, r := range [][2]int64{{9, 20}, {10, 15}} {
		if _, err := e.db.ExecContext(tok(e.ctx, uint64(r[1])), ins, r[0], 0); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := e.db.ExecContext(tok(e.ctx, 20), e.q("DELETE FROM accounts WHERE id IN (?, ?)"), 9, 10); err != nil {
		t.Fatalf("DELETE of rows of the own and an older token: %v", err)
	} else if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("RowsAffected = %d, want 2", n)
	}
	for _, id := range []int64{9, 10} {
		_, err = e.db.ExecContext(tok(e.ctx, 19), ins, id, 1)
		wantErr(t, err, fencedsql.ErrFenced)
	}
	if s.b.Name == "postgres" {
		// The same under a DateStyle that writes '/' into the mark's time.
		dtx, err := e.db.BeginTx(tok(e.ctx, 20), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.ExecContext(tok(e.ctx, 15), ins, 11, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := dtx.ExecContext(e.ctx, "SET LOCAL DateStyle = 'SQL, DMY'"); err != nil {
			t.Fatal(err)
		}
		if _, err := dtx.ExecContext(e.ctx, e.q("DELETE FROM accounts WHERE id = ?"), 11); err != nil {
			t.Fatal(err)
		}
		if err := dtx.Commit(); err != nil {
			t.Fatal(err)
		}
		_, err = e.db.ExecContext(tok(e.ctx, 19), ins, 11, 1)
		wantErr(t, err, fencedsql.ErrFenced)
	}
	// The same when a user's trigger, firing before the tombstone's, changes the
	// session's time zone in the middle of the statement (the mark names its statement
	// by a number, not by its start time as local text).
	trigger, session, reset := []string{
		"CREATE FUNCTION audit_tz() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN SET LOCAL TIME ZONE 'UTC'; RETURN NULL; END $$",
		"CREATE TRIGGER audit_tz AFTER DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION audit_tz()",
	}, "SET LOCAL TIME ZONE 'Europe/Berlin'", ""
	if s.b.MySQL {
		trigger = []string{"CREATE TRIGGER audit_tz AFTER DELETE ON accounts FOR EACH ROW PRECEDES fencedsql_tombdel_accounts SET time_zone = '+00:00'"}
		session, reset = "SET time_zone = '+05:00'", "SET time_zone = DEFAULT"
	}
	execAll(t, e.ctx, e.raw, trigger)
	if _, err := e.db.ExecContext(tok(e.ctx, 15), ins, 12, 0); err != nil {
		t.Fatal(err)
	}
	ztx, err := e.db.BeginTx(tok(e.ctx, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ztx.ExecContext(e.ctx, session); err != nil {
		t.Fatal(err)
	}
	if _, err := ztx.ExecContext(e.ctx, e.q("DELETE FROM accounts WHERE id = ?"), 12); err != nil {
		t.Fatal(err)
	}
	if reset != "" {
		if _, err := ztx.ExecContext(e.ctx, reset); err != nil {
			t.Fatal(err)
		}
	}
	if err := ztx.Commit(); err != nil {
		t.Fatal(err)
	}
	execAll(t, e.ctx, e.raw, []string{"DROP TRIGGER audit_tz" + map[bool]string{false: " ON accounts", true: ""}[s.b.MySQL]})
	_, err = e.db.ExecContext(tok(e.ctx, 19), ins, 12, 1)
	wantErr(t, err, fencedsql.ErrFenced)

	if s.b.MySQL {
		s.testDeleteMarkTimestamp(t, e, ins)
	}

	// A newer row among older ones: nothing deleted.
	if _, err := e.db.ExecContext(tok(e.ctx, 30), e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 4); err != nil {
		t.Fatal(err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 25), e.q("DELETE FROM accounts WHERE id IN (?, ?, ?)"), 3, 4, 5)
	wantErr(t, err, fencedsql.ErrFenced)
	if e.count() != 7 {
		t.Fatalf("%d rows after a fenced DELETE: a row went", e.count())
	}
	// A prepared DELETE, executed twice.
	st, err := e.db.PrepareContext(e.ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{3, 5} {
		if _, err := st.ExecContext(tok(e.ctx, 25), id); err != nil {
			t.Fatalf("prepared DELETE %d: %v", id, err)
		}
	}
	st.Close()
	_, err = e.db.ExecContext(tok(e.ctx, 29), del, 4)
	wantErr(t, err, fencedsql.ErrFenced)

	if s.b.Name == "postgres" {
		// The fence holds with every trigger disabled (the table owner can do that).
		execAll(t, e.ctx, e.raw, []string{"ALTER TABLE accounts DISABLE TRIGGER ALL"})
		_, err = e.db.ExecContext(tok(e.ctx, 29), del, 4)
		wantErr(t, err, fencedsql.ErrFenced)
		var enable []string
		for _, trg := range []string{"fencedsql_guard", "fencedsql_guard_delete", "fencedsql_guard_truncate", "fencedsql_tombstone_delete", "fencedsql_tombstone_insert", "fencedsql_tombstone_rekey"} {
			enable = append(enable, "ALTER TABLE accounts ENABLE ALWAYS TRIGGER "+trg)
		}
		execAll(t, e.ctx, e.raw, enable)
		if rep := s.check(e, spec)[0]; !rep.OK() {
			t.Fatalf("guards not back: %+v", rep)
		}
	}

	if s.b.Name == "postgres" {
		// A function of the fence's name earlier on the search_path (one that fences
		// nothing, even with the version marker in its body) is not the guard's: the
		// pool keeps the two statements, and the stale DELETE is fenced.
		execAll(t, e.ctx, e.raw, []string{"CREATE SCHEMA shadow",
			"CREATE FUNCTION shadow.fencedsql_fence_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE sql AS $$ SELECT 1 /* fencedsql one-statement delete v2 */ $$"})
		shadowed, err := sql.Open(s.b.DriverName, WithParam(WithParam(e.dsn, "fenced_tables=accounts"), "search_path=shadow,public"))
		if err != nil {
			t.Fatal(err)
		}
		defer shadowed.Close()
		_, err = shadowed.ExecContext(tok(e.ctx, 29), del, 4)
		wantErr(t, err, fencedsql.ErrFenced)
		if _, err := shadowed.ExecContext(tok(e.ctx, 31), del, 4); err != nil {
			t.Fatalf("DELETE on the shadowed pool: %v", err)
		}
		if e.count() != 4 {
			t.Fatalf("%d rows after the shadowed pool's DELETE, want 4", e.count())
		}
		shadowed.Close()
		execAll(t, e.ctx, e.raw, []string{"DROP SCHEMA shadow CASCADE"})
		if _, err := e.db.ExecContext(tok(e.ctx, 31), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 4, 0); err != nil {
			t.Fatalf("re-insert 4: %v", err)
		}
	}

	// Below the token floor: refused, nothing deleted.
	if err := schema.RaiseTokenFloor(e.ctx, e.raw, s.d, 28); err != nil {
		t.Fatal(err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 27), del, 6)
	wantErr(t, err, fencedsql.ErrBelowFloor)
	if e.count() != 5 {
		t.Fatalf("%d rows after a DELETE below the floor", e.count())
	}

	// The guard removed under the pool's verdict. Outside a transaction the DELETE
	// still deletes: the one statement failed whole, and the wrapper sent the two.
	execAll(t, e.ctx, e.raw, s.g.UnguardDDL(dialect.TableName{Name: "accounts"}))
	res, err = e.db.ExecContext(tok(e.ctx, 40), del, 6)
	if err != nil {
		t.Fatalf("DELETE with the fence function gone, outside a transaction: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 1 || e.count() != 4 {
		t.Fatalf("DELETE with the fence function gone: RowsAffected %d, %d rows left; want 1, 4", n, e.count())
	}
	// In a caller's transaction it fails and deletes nothing (the wrapper does not
	// retry inside the caller's transaction); the next DELETE runs as two statements.
	s.applyFix(e, s.check(e, spec)[0].Fix)
	fresh, err := sql.Open(s.b.DriverName, WithParam(e.dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.ExecContext(tok(e.ctx, 41), del, 7); err != nil || e.count() != 3 {
		t.Fatalf("DELETE on a fresh pool: %v, %d rows left, want 3", err, e.count())
	}
	execAll(t, e.ctx, e.raw, s.g.UnguardDDL(dialect.TableName{Name: "accounts"}))
	ftx, err := fresh.BeginTx(tok(e.ctx, 42), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ftx.ExecContext(e.ctx, del, 8); err == nil {
		t.Fatal("DELETE with the fence function gone, in a transaction: no error")
	}
	ftx.Rollback()
	if e.count() != 3 {
		t.Fatal("a failed DELETE deleted")
	}
	if _, err := fresh.ExecContext(tok(e.ctx, 42), del, 8); err != nil || e.count() != 2 {
		t.Fatalf("DELETE after the guard was removed: %v, %d rows left, want 2", err, e.count())
	}
}

// oneStatementEnv is a fresh database whose accounts (ids 1–8, token 5) have the
// documented set-up (schema.Check's Fix) and the one-statement DELETE; the test is
// skipped for a dialect without one (MySQL proper: no DELETE … RETURNING).
func (s *guardSuite) oneStatementEnv(t *testing.T) *env {
	f, ok := s.d.(dialect.DeleteFencer)
	if !ok {
		t.Skipf("dialect %s has no one-statement DELETE", s.d.Name())
	}
	e := setup(t, s.b)
	e.seed(5, 1, 2, 3, 4, 5, 6, 7, 8)
	s.applyFix(e, s.check(e, schema.GuardSpec{Table: "accounts"})[0].Fix)
	if !s.deleteFenceReady(e, f) {
		if s.b.MySQL && !s.isMariaDB(e) {
			t.Skip("MySQL has no DELETE … RETURNING: the two-statement form stays (DeleteFenceQuery says no)")
		}
		t.Fatal("DeleteFenceQuery says no after schema.Check's Fix")
	}
	return e
}

// deleteFenceReady runs DeleteFenceQuery on the plain pool.
func (s *guardSuite) deleteFenceReady(e *env, f dialect.DeleteFencer) bool {
	e.t.Helper()
	q, args := f.DeleteFenceQuery(dialect.TableName{Name: "accounts"})
	var n sql.NullInt64
	if err := e.raw.QueryRowContext(e.ctx, q, args...).Scan(&n); err != nil && !errors.Is(err, sql.ErrNoRows) {
		e.t.Fatalf("DeleteFenceQuery: %v", err)
	}
	return n.Int64 == 1
}

func (s *guardSuite) isMariaDB(e *env) bool {
	var v string
	if err := e.raw.QueryRowContext(e.ctx, "SELECT VERSION()").Scan(&v); err != nil {
		e.t.Fatal(err)
	}
	return strings.Contains(strings.ToLower(v), "mariadb")
}

// rowUpdates is the number of row updates the transaction's session has made so far
// (PostgreSQL: this transaction's, MySQL: the session's handler count).
func (s *guardSuite) rowUpdates(e *env, tx *sql.Tx) int64 {
	e.t.Helper()
	var n int64
	var err error
	if s.b.MySQL {
		var name string
		err = tx.QueryRowContext(e.ctx, "SHOW SESSION STATUS LIKE 'Handler_update'").Scan(&name, &n)
	} else {
		err = tx.QueryRowContext(e.ctx, "SELECT COALESCE(SUM(n_tup_upd), 0) FROM pg_stat_xact_user_tables").Scan(&n)
	}
	if err != nil {
		e.t.Fatalf("row update count: %v", err)
	}
	return n
}

// testDeleteMarkTimestamp: a user's trigger that sets @@timestamp, the time MariaDB's
// mark names its statement by (a red-team pass: the tombstone missed the mark and
// recorded the row's older token, and a holder between the two re-inserted the key).
// A pool that chose the one-statement form before the trigger existed: outside a
// transaction the DELETE is sent again as two statements and the tombstone holds the
// deleter's token; in a caller's transaction it fails whole (ErrGuard), also when a
// later trigger sets the time back, and the next DELETE runs as two statements. A pool
// opened with the trigger in place does not choose the form (DeleteFenceQuery says no).
func (s *guardSuite) testDeleteMarkTimestamp(t *testing.T, e *env, ins string) {
	del := e.q("DELETE FROM accounts WHERE id = ?")
	warm, err := sql.Open(s.b.DriverName, WithParam(e.dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	warm.SetMaxOpenConns(1)
	for _, id := range []int64{13, 14, 15} {
		if _, err := e.db.ExecContext(tok(e.ctx, 15), ins, id, 0); err != nil {
			t.Fatal(err)
		}
	}
	// warm's verdict: yes (the DELETE of 15 runs as one statement).
	if _, err := warm.ExecContext(tok(e.ctx, 20), del, 15); err != nil {
		t.Fatal(err)
	}
	execAll(t, e.ctx, e.raw, []string{"CREATE TABLE audit (id BIGINT AUTO_INCREMENT PRIMARY KEY, acct BIGINT, at DATETIME(6))",
		"CREATE TRIGGER audit_ts BEFORE DELETE ON accounts FOR EACH ROW BEGIN SET timestamp = 1234567; INSERT INTO audit (acct, at) VALUES (OLD.id, NOW(6)); END"})
	if _, err := e.db.ExecContext(tok(e.ctx, 20), del, 13); err != nil {
		t.Fatalf("DELETE under a trigger that sets timestamp, outside a transaction: %v", err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 19), ins, 13, 1)
	wantErr(t, err, fencedsql.ErrFenced)

	// The same trigger, and a later one that sets the time back: in a caller's
	// transaction the DELETE fails whole.
	execAll(t, e.ctx, e.raw, []string{"CREATE TRIGGER audit_ts_back AFTER DELETE ON accounts FOR EACH ROW FOLLOWS fencedsql_tombdel_accounts SET timestamp = DEFAULT"})
	rows := e.count()
	tx, err := warm.BeginTx(tok(e.ctx, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(e.ctx, del, 14)
	wantErr(t, err, fencedsql.ErrGuard)
	tx.Rollback()
	if e.count() != rows {
		t.Fatal("the failed DELETE deleted")
	}
	tx, err = warm.BeginTx(tok(e.ctx, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(e.ctx, del, 14); err != nil {
		t.Fatalf("the next DELETE, as two statements: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 19), ins, 14, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if s.deleteFenceReady(e, s.d.(dialect.DeleteFencer)) {
		t.Fatal("DeleteFenceQuery says yes while a user's DELETE trigger is on the table")
	}
	execAll(t, e.ctx, e.raw, []string{"DROP TRIGGER audit_ts", "DROP TRIGGER audit_ts_back", "DROP TABLE audit"})
	if !s.deleteFenceReady(e, s.d.(dialect.DeleteFencer)) {
		t.Fatal("DeleteFenceQuery says no once the user's triggers are gone")
	}
}
