package postgres_test

// Red-team rt60c: the transaction's recorded token (fencedsql_guard.tx_token,
// fencedsql/txtoken.go) on paths and statement forms that reach the server without
// the wrapper re-recording it, or that revert it without being classified as
// reverting (ResetsSession / TxOnly).
//
// Oracle (every test): kid fenced under l1, deleted (by a cascade from par) in the
// same transaction after a lease l3 joined it: the tombstone of kid's key must be
// >= l3, and an INSERT of the key under l2 (l1 < l2 < l3) must be ErrFenced.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

func txTokCOracle(t *testing.T, raw, db *sql.DB, key int, l1, l2, l3 *lockclient.Lease, what string) {
	t.Helper()
	if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", fencetest.ExecOf(db), key, l2, l3); err != nil {
		t.Errorf("%s: kid fenced under %d: %v", what, l1.Token(), err)
	}
}

// TestTxTokenRecordedAfterUserFunctionReset: a statement that reverts the
// recorded token from inside a user function called by a SELECT is not classified
// as reverting (a SELECT is neither TxOnly nor ResetsSession: plan.mayChangeWith
// returns false for a single statement starting with SELECT), so the wrapper does
// not record the token again before the next statement, and the cascade that
// follows is tombstoned at kid's stamp l1. The functions write no guarded table (no
// side door) and their bodies are never judged for the setting.
func TestTxTokenRecordedAfterUserFunctionReset(t *testing.T) {
	raw, db := txTokSetup(t)
	testdb.Exec(t, raw,
		// A "reset the session's context" helper (RLS-style apps keep custom settings).
		`CREATE FUNCTION app_reset_context() RETURNS void LANGUAGE plpgsql AS $$ BEGIN RESET ALL; END $$`,
		// The same as an SQL function, with a name built at run time (no literal prefix).
		`CREATE FUNCTION app_clear(p text) RETURNS text LANGUAGE sql AS $$ SELECT pg_catalog.set_config(p || '.tx_token', '', true) $$`,
		// A trigger function on an unguarded table that resets the session.
		`CREATE TABLE audit (id bigserial PRIMARY KEY, note text)`,
		`CREATE FUNCTION audit_reset() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RESET ALL; RETURN NEW; END $$`,
		`CREATE TRIGGER audit_reset AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION audit_reset()`,
	)
	svc := memlock.New()
	cases := []txTokCase{
		{name: "select-func-reset-all", attack: []string{"SELECT app_reset_context()"}},
		{name: "select-func-in-from", attack: []string{"SELECT * FROM app_reset_context()"}},
		{name: "select-sql-func-set-config", attack: []string{"SELECT app_clear('fencedsql_guard')"}},
		{name: "insert-firing-trigger", attack: []string{"INSERT INTO audit (note) VALUES ('x')"}},
		{name: "prepared-select-func", attack: []string{"SELECT app_reset_context()"}, prepared: true},
	}
	runTxTokCases(t, raw, db, svc, 6000, cases)
}

// TestTxTokenRecordedBeforeCommitTimeCascade: the recording is made before statements
// only; COMMIT is sent without it. A user's deferred constraint trigger on an
// unguarded table (jobs) deletes the parent at COMMIT, and the cascade deletes kid,
// which the transaction fenced under l1 (the row guard admits it: written by this
// transaction first). When the last statement before COMMIT reverted the recorded
// token (a ROLLBACK TO SAVEPOINT of a nested transaction that failed — GORM/bun's
// pattern —, RESET ALL), the wrapper knows it is stale but COMMIT does not record it
// again, and the cascade is tombstoned at l1.
func TestTxTokenRecordedBeforeCommitTimeCascade(t *testing.T) {
	dsn, raw := txTokTables(t, []string{"kid"}, fencetest.JobsDeletingParentAtCommit()...)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=kid")
	svc := memlock.New()
	ctx := context.Background()
	forms := []struct {
		name   string
		revert func(tx *sql.Tx, ctx3 context.Context) error
	}{
		{"none (control)", func(*sql.Tx, context.Context) error { return nil }},
		{"rollback-to", func(tx *sql.Tx, ctx3 context.Context) error {
			_, err := tx.ExecContext(ctx3, "ROLLBACK TO SAVEPOINT s")
			return err
		}},
		{"reset-all", func(tx *sql.Tx, ctx3 context.Context) error {
			_, err := tx.ExecContext(ctx3, "RESET ALL")
			return err
		}},
		{"prepared-rollback-to", func(tx *sql.Tx, ctx3 context.Context) error {
			st, err := tx.PrepareContext(ctx3, "ROLLBACK TO SAVEPOINT s")
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = st.ExecContext(ctx3)
			return err
		}},
	}
	for i, f := range forms {
		key := 7000 + i
		t.Run(f.name, func(t *testing.T) {
			testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key))
			l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rt60c-commit%d", key))
			ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
			tx, err := db.BeginTx(ctx1, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			for _, s := range []struct {
				c context.Context
				q string
			}{
				{ctx1, fmt.Sprintf("UPDATE kid SET balance = balance + 1 WHERE id = %d", key)},
				{ctx1, fmt.Sprintf("INSERT INTO jobs (par_id) VALUES (%d)", key)}, // queues the deferred deletion
				{ctx1, "SAVEPOINT s"},
				{ctx3, "SELECT 1"}, // l3 joins: the wrapper records tx_token = l3 (inside the savepoint)
			} {
				if _, err := tx.ExecContext(s.c, s.q); err != nil {
					t.Fatalf("%s: %v", s.q, err)
				}
			}
			if err := f.revert(tx, ctx3); err != nil {
				t.Fatalf("%s: %v", f.name, err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatalf("commit: %v", err)
			}
			var n int
			if err := raw.QueryRow(fmt.Sprintf("SELECT count(*) FROM kid WHERE id = %d", key)).Scan(&n); err != nil || n != 0 {
				t.Fatalf("kid %d still there after the deferred deletion (%d, %v)", key, n, err)
			}
			txTokCOracle(t, raw, db, key, l1, l2, l3, "commit after "+f.name)
		})
	}
}

// TestTxTokenRecordedAfterRawConnRollbackTo: conn.Raw (unwrap.go) re-arms the session
// and name checks for what the caller may do on the raw connection, but not the
// recorded token (txTokenStale): a ROLLBACK TO SAVEPOINT sent on the raw connection
// reverts tx_token, and the next fenced statement through the wrapper (the cascade
// DELETE of par) is sent without recording it again.
func TestTxTokenRecordedAfterRawConnRollbackTo(t *testing.T) {
	raw, db := txTokSetup(t)
	svc := memlock.New()
	ctx := context.Background()
	key := 7100
	testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key))
	l1, l2, l3 := fencetest.ThreeLeases(t, svc, "rt60c-raw")
	ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	for _, s := range []struct {
		c context.Context
		q string
	}{
		{ctx1, fmt.Sprintf("UPDATE kid SET balance = balance + 1 WHERE id = %d", key)},
		{ctx1, "SAVEPOINT s"},
		{ctx3, "SELECT 1"},
	} {
		if _, err := tx.ExecContext(s.c, s.q); err != nil {
			t.Fatalf("%s: %v", s.q, err)
		}
	}
	err = conn.Raw(func(dc any) error {
		u, ok := dc.(interface{ Raw() driver.Conn })
		if !ok {
			return fmt.Errorf("driver conn %T has no Raw", dc)
		}
		ex, ok := u.Raw().(driver.ExecerContext)
		if !ok {
			return fmt.Errorf("raw conn %T is no ExecerContext", u.Raw())
		}
		_, err := ex.ExecContext(ctx, "ROLLBACK TO SAVEPOINT s", nil)
		return err
	})
	if err != nil {
		t.Fatalf("raw ROLLBACK TO: %v", err)
	}
	if _, err := tx.ExecContext(ctx3, fmt.Sprintf("DELETE FROM par WHERE id = %d", key)); err != nil {
		t.Fatalf("delete par: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	txTokCOracle(t, raw, db, key, l1, l2, l3, "raw ROLLBACK TO then cascade")
}

// TestTxTokenSingleRevertStatementsPass: ordinary single statements that
// revert nothing harmful or are alone in their text, in a transaction whose
// statements carried two tokens, must not be refused (the refusal is for a reverting
// statement FOLLOWED by others in one text). Spellings: a trailing semicolon, a
// trailing comment, a SET LOCAL of an ordinary setting.
func TestTxTokenSingleRevertStatementsPass(t *testing.T) {
	raw, db := txTokSetup(t)
	svc := memlock.New()
	ctx := context.Background()
	forms := []string{
		"ROLLBACK TO SAVEPOINT s;",
		"ROLLBACK TO SAVEPOINT s ; ",
		"ROLLBACK TO SAVEPOINT s -- undo\n",
		"ROLLBACK TO SAVEPOINT s /* undo */",
		"RELEASE SAVEPOINT s;",
		"RESET ALL;",
		"SET LOCAL lock_timeout = '5s';",
		"SET LOCAL statement_timeout TO 0 ;;",
		"SELECT 1;",
	}
	for i, f := range forms {
		key := 7200 + i
		t.Run(f, func(t *testing.T) {
			testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key))
			l1, _, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rt60c-or%d", key))
			ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
			tx, err := db.BeginTx(ctx1, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			for _, s := range []struct {
				c context.Context
				q string
			}{
				{ctx1, fmt.Sprintf("UPDATE kid SET balance = balance + 1 WHERE id = %d", key)},
				{ctx1, "SAVEPOINT s"},
				{ctx3, "SELECT 1"},
				{ctx3, f},
				{ctx3, fmt.Sprintf("UPDATE kid SET balance = balance + 1 WHERE id = %d", key)},
			} {
				if _, err := tx.ExecContext(s.c, s.q); err != nil {
					t.Fatalf("[fail-closed-wrong] %q in a transaction of two tokens (%d, %d): %v — a single statement, alone in its text, must not be refused", s.q, l1.Token(), l3.Token(), err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTxTokenBuiltinRevertFormsRefused: reverting the recorded token with built-ins only
// (no user function): pg_settings' UPDATE rule (set_config underneath), a set_config
// whose name comes from pg_settings, a reset_val restore. Expected refused (held).
func TestTxTokenBuiltinRevertFormsRefused(t *testing.T) {
	raw, db := txTokSetup(t)
	svc := memlock.New()
	cases := []txTokCase{
		{name: "update-pg_settings", attack: []string{"UPDATE pg_settings SET setting = '0' WHERE name = 'fencedsql_guard.tx_token'"}},
		{name: "update-pg_settings-regex", attack: []string{"UPDATE pg_catalog.pg_settings SET setting = reset_val WHERE name ~ 'tx.token'"}},
		{name: "set_config-from-pg_settings", attack: []string{"SELECT pg_catalog.set_config(s.name, s.reset_val, true) FROM pg_catalog.pg_settings s WHERE s.name ~ 'tx.token'"}},
		{name: "set_config-from-show-all", attack: []string{"SELECT set_config(x.name, '', true) FROM pg_show_all_settings() x WHERE x.name LIKE '%tx%token'"}},
	}
	runTxTokCases(t, raw, db, svc, 7300, cases)
}

// TestTxTokenExecModes: the recording under each pgx query exec mode (the DSN's
// default_query_exec_mode), with a savepoint rolled back after the raise and a plain
// cascade after it. Oracle as above; a raw error or refusal is a finding
// (fail-closed-wrong). Expected to hold.
func TestTxTokenExecModes(t *testing.T) {
	dsn, raw := txTokSchema(t)
	svc := memlock.New()
	for i, mode := range []string{"simple_protocol", "exec", "describe_exec", "cache_describe", "cache_statement"} {
		db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=par,kid&default_query_exec_mode="+mode)
		for j, c := range []txTokCase{
			{name: mode + "/plain"},
			{name: mode + "/rollback-to", pre: []string{"SAVEPOINT s"}, attack: []string{"ROLLBACK TO SAVEPOINT s"}},
			{name: mode + "/prepared-rollback-to", pre: []string{"SAVEPOINT s"}, attack: []string{"ROLLBACK TO SAVEPOINT s"}, prepared: true},
			{name: mode + "/reset-all", attack: []string{"RESET ALL"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				if txTokRun(t, raw, db, svc, 7400+10*i+j, c) {
					t.Logf("%s: refused", c.name)
				}
			})
		}
	}
}

// TestTxTokenPoolStmtOnTx: a statement prepared on the pool (db.Prepare, outside any
// transaction; sqlx's Preparex and tx.Stmtx do the same) and run in the transaction
// through tx.StmtContext: database/sql prepares it again on the transaction's
// connection. The ROLLBACK TO (or RESET ALL) run that way must make the next
// statement record the token again. Expected to hold.
func TestTxTokenPoolStmtOnTx(t *testing.T) {
	raw, db := txTokSetup(t)
	svc := memlock.New()
	ctx := context.Background()
	for i, q := range []string{"ROLLBACK TO SAVEPOINT s", "RESET ALL"} {
		key := 7500 + i
		t.Run(q, func(t *testing.T) {
			testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key))
			l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rt60c-ps%d", key))
			ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
			pst, err := db.PrepareContext(ctx, q)
			if err != nil {
				t.Logf("held: prepare on the pool refused: %v", err)
				return
			}
			defer pst.Close()
			del, err := db.PrepareContext(ctx, "DELETE FROM par WHERE id = $1")
			if err != nil {
				t.Fatal(err)
			}
			defer del.Close()
			tx, err := db.BeginTx(ctx1, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			for _, s := range []struct {
				c context.Context
				q string
			}{
				{ctx1, fmt.Sprintf("UPDATE kid SET balance = balance + 1 WHERE id = %d", key)},
				{ctx1, "SAVEPOINT s"},
				{ctx3, "SELECT 1"},
			} {
				if _, err := tx.ExecContext(s.c, s.q); err != nil {
					t.Fatalf("%s: %v", s.q, err)
				}
			}
			if _, err := tx.StmtContext(ctx3, pst).ExecContext(ctx3); err != nil {
				if errors.Is(err, fencedsql.ErrUnsupported) {
					t.Logf("held: refused: %v", err)
					return
				}
				t.Fatalf("%s through tx.Stmt: %v", q, err)
			}
			if _, err := tx.StmtContext(ctx3, del).ExecContext(ctx3, key); err != nil {
				t.Fatalf("delete par through tx.Stmt: %v", err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			txTokCOracle(t, raw, db, key, l1, l2, l3, q+" through tx.Stmt of a pool statement")
		})
	}
}

// TestTxTokenRecordedAtCommitAfterRefusedStatement (F2, database/sql without a
// revert): the lease l3 joins the transaction by a statement that checkLease admits
// (noteTxToken: the token is noted) and the planner then refuses, so nothing is
// recorded; the transaction commits under l1 and l3 (the Commit checks both), and a
// deferred trigger's deletion at COMMIT is tombstoned at l1.
func TestTxTokenRecordedAtCommitAfterRefusedStatement(t *testing.T) {
	dsn, raw := txTokTables(t, []string{"kid"}, fencetest.JobsDeletingParentAtCommit()...)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=kid")
	ctx := context.Background()
	key := 7600
	testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key))
	l1, l2, l3 := fencetest.ThreeLeases(t, memlock.New(), "rt60c-refused")
	ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
	tx, err := db.BeginTx(ctx1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	for _, q := range []string{fmt.Sprintf("UPDATE kid SET balance = balance + 1 WHERE id = %d", key), fmt.Sprintf("INSERT INTO jobs (par_id) VALUES (%d)", key)} {
		if _, err := tx.ExecContext(ctx1, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	refused := "DELETE FROM fencedsql_tomb_kid"
	if _, err := tx.ExecContext(ctx3, refused); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("%s under l3: %v, want ErrUnsupported", refused, err)
	}
	if err := tx.Commit(); err != nil {
		t.Logf("held: commit refused: %v", err)
		return
	}
	txTokCOracle(t, raw, db, key, l1, l2, l3, "commit after l3 joined by a refused statement")
}
