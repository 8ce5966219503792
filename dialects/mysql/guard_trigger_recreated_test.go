package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"math/rand"
	"regexp"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A guard or tombstone trigger of accounts re-created with its own timing, event and
// body but one attribute changed: its DEFINER (an account that does not exist: the
// account that ran -apply dropped since, or a dump restored on a server without it;
// red-team rt57b F4), the sql_mode it is stored with, or its place after a user's
// trigger (FOLLOWS). Whatever changed, either schema.Check reports the table or the
// fence holds.

// ghostDefiner is an account no test creates.
const ghostDefiner = "'fsql_gone_definer'@'localhost'"

// catalogTrigger is one of the triggers on accounts as the catalog shows it.
type catalogTrigger struct{ name, timing, event, body string }

// guardTriggersOnAccounts lists fencedsql's triggers on accounts.
func guardTriggersOnAccounts(t *testing.T, ctx context.Context, db *sql.DB) []catalogTrigger {
	t.Helper()
	rows, err := db.QueryContext(ctx, "SELECT TRIGGER_NAME, ACTION_TIMING, EVENT_MANIPULATION, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'accounts' AND TRIGGER_NAME LIKE 'fencedsql\\_%' ORDER BY ACTION_ORDER")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []catalogTrigger
	for rows.Next() {
		var r catalogTrigger
		if err := rows.Scan(&r.name, &r.timing, &r.event, &r.body); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		t.Fatal("no guard triggers on accounts")
	}
	return out
}

// fenceOracle runs the fencing oracle on accounts (rows 1, 2 at token 40 by the
// holder, row 3 deleted by it): the holder's UPDATE, INSERT and DELETE under 50 pass;
// a stale holder's (30) update and re-insert of the deleted key are refused with
// ErrFenced, and the same written on a plain connection change nothing. It returns
// what went wrong.
func fenceOracle(t *testing.T, ctx context.Context, dsn string, admin *sql.DB) []string {
	var bad []string
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	for _, q := range []string{"UPDATE accounts SET balance = balance + 1 WHERE id = 1", "INSERT INTO accounts (id, balance) VALUES (4, 1)", "DELETE FROM accounts WHERE id = 4"} {
		if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 50), q); err != nil {
			bad = append(bad, "holder's "+q+" under 50: "+err.Error())
		}
	}
	for _, q := range []string{"UPDATE accounts SET balance = 666 WHERE id = 2", "INSERT INTO accounts (id, balance) VALUES (3, 666)"} {
		if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 30), q); !errors.Is(err, fencedsql.ErrFenced) {
			bad = append(bad, "stale "+q+" under 30: "+errText(err))
		}
	}
	admin.ExecContext(ctx, "UPDATE accounts SET balance = 666, fence_token = 30, version = version + 1 WHERE id = 2")
	admin.ExecContext(ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (3, 666, 30, 1)")
	admin.ExecContext(ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (4, 666, 30, 1)")
	var n int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE balance = 666").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		bad = append(bad, "a stale write (token 30) changed a guarded row")
	}
	return bad
}

func errText(err error) string {
	if err == nil {
		return "accepted"
	}
	return err.Error()
}

// guardedAccounts sets up accounts with its guards and the holder's writes under 40
// (rows 1 and 2 updated, row 3 deleted), and returns the DSN and an admin pool.
func guardedAccounts(t *testing.T, ctx context.Context) (string, *sql.DB) {
	t.Helper()
	dsn, admin := tombstoneClockSetup(t, ctx)
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	testdb.Exec(t, admin, "INSERT INTO accounts (id, balance, fence_token) VALUES (3, 100, 5)")
	for _, q := range []string{"UPDATE accounts SET balance = 1 WHERE id IN (1, 2, 3)", "DELETE FROM accounts WHERE id = 3"} {
		if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 40), q); err != nil {
			t.Fatalf("%s under 40: %v", q, err)
		}
	}
	return dsn, admin
}

// recreateTrigger re-creates tr on accounts with its own timing, event and body and
// change applied: "definer <account>", "sql_mode <mode>", or "precedes" (a user's
// trigger of the same timing and event, which does nothing, placed first).
func recreateTrigger(t *testing.T, ctx context.Context, admin *sql.DB, tr catalogTrigger, change string) {
	t.Helper()
	conn, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	defer conn.ExecContext(ctx, "SET SESSION sql_mode = DEFAULT") //nolint:errcheck
	definer, order := "", ""
	switch {
	case strings.HasPrefix(change, "definer "):
		definer = "DEFINER = " + strings.TrimPrefix(change, "definer ") + " "
	case strings.HasPrefix(change, "sql_mode "):
		mode := strings.Trim(strings.TrimPrefix(change, "sql_mode "), "'")
		if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode = '"+mode+"'"); err != nil {
			t.Fatal(err)
		}
	case change == "precedes":
		if _, err := conn.ExecContext(ctx, "CREATE TRIGGER user_first "+tr.timing+" "+tr.event+" ON accounts FOR EACH ROW SET @user_first_seen = 1"); err != nil {
			t.Fatal(err)
		}
		order = "FOLLOWS user_first "
	}
	for _, q := range []string{
		"DROP TRIGGER " + tr.name,
		"CREATE " + definer + "TRIGGER " + tr.name + " " + tr.timing + " " + tr.event + " ON accounts FOR EACH ROW " + order + tr.body,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s re-created with %s: %v", tr.name, change, err)
		}
	}
}

// checkAccounts runs schema.Check on accounts and returns whether it reports the
// table OK, and its problems.
func checkAccounts(t *testing.T, ctx context.Context, admin *sql.DB) (bool, []string) {
	t.Helper()
	reps, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	ok := len(reps) > 0
	for _, r := range reps {
		ok = ok && r.OK()
	}
	return ok, fencetest.ReportProblems(reps)
}

// wantDefinerSchemaError fails unless err is a *SchemaError (ErrSchema) whose text
// names the ghost account and, when object is not "", the object.
func wantDefinerSchemaError(t *testing.T, what string, err error, object string) {
	t.Helper()
	var se *fencedsql.SchemaError
	if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || !strings.Contains(err.Error(), "fsql_gone_definer") || !strings.Contains(err.Error(), object) {
		t.Fatalf("%s: %v, want a *SchemaError naming %q and the account fsql_gone_definer", what, err, object)
	}
}

// TestGuardTriggerDefinerGone (red-team rt57b F4): each of accounts' guard and
// tombstone triggers (seeded order) re-created with a DEFINER that does not exist.
// schema.Check reports it (naming the trigger and the account), a fresh pool's lazy
// check refuses the holder's write with a *SchemaError naming them (not the raw
// 1449), and -apply (ApplyRounds) re-creates it as the applying account: Check is OK
// again and the fence holds.
func TestGuardTriggerDefinerGone(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for _, pick := range rand.New(rand.NewSource(seed)).Perm(6) {
		t.Run("", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dsn, admin := guardedAccounts(t, ctx)
			trs := guardTriggersOnAccounts(t, ctx, admin)
			tr := trs[pick%len(trs)]
			t.Logf("%s (%s %s)", tr.name, tr.timing, tr.event)
			recreateTrigger(t, ctx, admin, tr, "definer "+ghostDefiner)
			ok, problems := checkAccounts(t, ctx, admin)
			if ok || !strings.Contains(strings.Join(problems, "\n"), tr.name) || !strings.Contains(strings.Join(problems, "\n"), "fsql_gone_definer") {
				t.Fatalf("schema.Check with %s's DEFINER gone: OK %v, %q; want it reported", tr.name, ok, problems)
			}
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
			_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
			wantDefinerSchemaError(t, "holder's UPDATE through a fresh pool", err, tr.name)
			if reps, err := fencetest.ApplyRounds(ctx, admin, mysql.Dialect, false, schema.GuardSpec{Table: "accounts"}); err != nil {
				t.Fatalf("apply: %v", err)
			} else if p := fencetest.ReportProblems(reps); len(p) > 0 {
				t.Fatalf("after apply: %q", p)
			}
			if bad := fenceOracle(t, ctx, dsn, admin); len(bad) > 0 {
				t.Fatalf("after apply: %q", bad)
			}
		})
	}
}

// TestGuardDefinerGoneAfterLazyCheck: the DEFINER of the guard trigger is lost after
// the pool's lazy check passed (its verdict is cached): the holder's write fails with
// a *SchemaError wrapping the server's 1449 (Classify), not the raw error, and the
// verdict is dropped, so the next write's lazy check names the trigger. An
// application account that may not read the server's accounts nor the triggers (the
// least-privilege layout) gets the same *SchemaError from the write itself.
func TestGuardDefinerGoneAfterLazyCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, admin := guardedAccounts(t, ctx)
	app := limitedAccount(t, admin, dsn, "gd_app_", "SELECT, INSERT, UPDATE, DELETE, EXECUTE ON DB.*")
	pools := map[string]*sql.DB{
		"admin": testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts")),
		"app":   testdb.Open(t, "fenced-mysql", fencetest.WithParam(app, "fenced_tables=accounts")),
	}
	for name, p := range pools {
		if _, err := p.ExecContext(fencedsql.WithToken(ctx, 45), "UPDATE accounts SET balance = balance + 1 WHERE id = 1"); err != nil {
			t.Fatalf("%s pool's first write: %v", name, err)
		}
	}
	var guard catalogTrigger
	for _, tr := range guardTriggersOnAccounts(t, ctx, admin) {
		if strings.HasPrefix(tr.name, "fencedsql_guard_") {
			guard = tr
		}
	}
	recreateTrigger(t, ctx, admin, guard, "definer "+ghostDefiner)
	for _, name := range []string{"admin", "app"} {
		_, err := pools[name].ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
		wantDefinerSchemaError(t, name+" pool's write after the definer was lost", err, "")
		var me *gomysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1449 {
			t.Fatalf("%s pool: %v, want the server's 1449 reachable", name, err)
		}
	}
	_, err := pools["admin"].ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
	wantDefinerSchemaError(t, "admin pool's next write (lazy check again)", err, guard.name)
}

// TestRecorderDefinerGone: the tombstone guard's absence recorder (SQL SECURITY
// DEFINER) re-created with its own text and a DEFINER that does not exist: Check
// reports it, a fresh pool refuses a claim of an absent key with a *SchemaError
// naming it, and -apply re-creates it: the claim records the key again.
func TestRecorderDefinerGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, admin := guardedAccounts(t, ctx)
	conn, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var name, mode, create, cs, coll, dbColl string
	if err := conn.QueryRowContext(ctx, "SHOW CREATE PROCEDURE fencedsql_tombclaim_accounts").Scan(&name, &mode, &create, &cs, &coll, &dbColl); err != nil {
		t.Fatal(err)
	}
	ghost := regexp.MustCompile("^CREATE DEFINER=`[^`]*`@`[^`]*` ").ReplaceAllString(create, "CREATE DEFINER = "+ghostDefiner+" ")
	if ghost == create {
		t.Fatalf("no DEFINER in %q", create)
	}
	for _, q := range []string{"SET SESSION sql_mode = '" + mode + "'", "DROP PROCEDURE fencedsql_tombclaim_accounts", ghost, "SET SESSION sql_mode = DEFAULT"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ok, problems := checkAccounts(t, ctx, admin)
	if ok || !strings.Contains(strings.Join(problems, "\n"), "fencedsql_tombclaim_accounts") || !strings.Contains(strings.Join(problems, "\n"), "fsql_gone_definer") {
		t.Fatalf("schema.Check with the recorder's DEFINER gone: OK %v, %q; want it reported", ok, problems)
	}
	claim := func(db *sql.DB) error {
		c := fencedsql.WithToken(ctx, 60)
		tx, err := db.BeginTx(c, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck
		var id int64
		if err := tx.QueryRowContext(c, "SELECT id FROM accounts WHERE id = 9 FOR UPDATE").Scan(&id); !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		return tx.Commit()
	}
	err = claim(testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts")))
	wantDefinerSchemaError(t, "claim of an absent key through a fresh pool", err, "fencedsql_tombclaim_accounts")
	if reps, err := fencetest.ApplyRounds(ctx, admin, mysql.Dialect, false, schema.GuardSpec{Table: "accounts"}); err != nil {
		t.Fatalf("apply: %v", err)
	} else if p := fencetest.ReportProblems(reps); len(p) > 0 {
		t.Fatalf("after apply: %q", p)
	}
	if err := claim(testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))); err != nil {
		t.Fatalf("claim after apply: %v", err)
	}
	if got := tombToken(t, admin, "accounts", "id = 9"); got != 60 {
		t.Fatalf("tombstone of 9 after the claim under 60: %d", got)
	}
}

// TestGuardTriggerModeAndOrderKeepsFence (red-team rt57b, held): a guard or
// tombstone trigger re-created with its own text under another stored sql_mode or
// placed after a user's trigger of the same timing and event (FOLLOWS) still fences:
// when Check reports the table OK, the holder's writes pass and the stale ones are
// refused. Seeded random trigger per variant.
func TestGuardTriggerModeAndOrderKeepsFence(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	for _, change := range []string{"sql_mode ''", "sql_mode ANSI", "sql_mode NO_BACKSLASH_ESCAPES,PAD_CHAR_TO_FULL_LENGTH", "sql_mode MSSQL", "sql_mode TRADITIONAL", "precedes"} {
		t.Run(change, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dsn, admin := guardedAccounts(t, ctx)
			trs := guardTriggersOnAccounts(t, ctx, admin)
			tr := trs[rng.Intn(len(trs))]
			recreateTrigger(t, ctx, admin, tr, change)
			ok, problems := checkAccounts(t, ctx, admin)
			bad := fenceOracle(t, ctx, dsn, admin)
			t.Logf("%s (%s %s) re-created with %s: Check OK %v %q; oracle %q", tr.name, tr.timing, tr.event, change, ok, problems, bad)
			if ok && len(bad) > 0 {
				t.Errorf("schema.Check reports accounts OK with %s re-created with %s, but: %q", tr.name, change, bad)
			}
		})
	}
}

// TestGuardDefinerDroppedAccountOrRole: the guard trigger re-created as an existing
// account, then as an existing role (MariaDB), is not reported; once that account or
// role is dropped it is (the realistic way: DROP USER keeps the trigger).
func TestGuardDefinerDroppedAccountOrRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, admin := guardedAccounts(t, ctx)
	other := limitedAccount(t, admin, dsn, "gd_def_", "SELECT ON DB.accounts")
	cfg, err := gomysql.ParseDSN(other)
	if err != nil {
		t.Fatal(err)
	}
	role := "gd_role_" + cfg.User[len(cfg.User)-8:]
	testdb.Exec(t, admin, "CREATE ROLE "+role)
	t.Cleanup(func() { admin.Exec("DROP ROLE IF EXISTS " + role) })
	var guard catalogTrigger
	for _, tr := range guardTriggersOnAccounts(t, ctx, admin) {
		if strings.HasPrefix(tr.name, "fencedsql_guard_") {
			guard = tr
		}
	}
	for _, c := range []struct{ definer, drop, name string }{
		{"'" + cfg.User + "'@'127.0.0.1'", "DROP USER '" + cfg.User + "'@'127.0.0.1'", cfg.User},
		{role, "DROP ROLE " + role, role},
	} {
		recreateTrigger(t, ctx, admin, guard, "definer "+c.definer)
		if ok, problems := checkAccounts(t, ctx, admin); !ok {
			t.Fatalf("guard trigger run as the existing %s: %q, want OK", c.definer, problems)
		}
		testdb.Exec(t, admin, c.drop)
		if ok, problems := checkAccounts(t, ctx, admin); ok || !strings.Contains(strings.Join(problems, "\n"), c.name) {
			t.Fatalf("guard trigger run as the dropped %s: OK %v, %q; want it reported", c.definer, ok, problems)
		}
		if _, err := fencetest.ApplyRounds(ctx, admin, mysql.Dialect, false, schema.GuardSpec{Table: "accounts"}); err != nil {
			t.Fatal(err)
		}
	}
}
