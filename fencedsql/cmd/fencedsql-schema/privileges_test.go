package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The least-privilege set-up in one command (the threat model, docs/design.md G15):
// a fresh owner role and application role; fencedsql-schema -owner -app-role -apply
// makes the table fit, installs the guards owned by the owner and grants the
// application what it needs. Logged in as the application role, fenced writes work
// through the fenced pool, and on a plain connection nothing that would take the
// guards down does. schema.Check with WithRoles flags the superuser the tests run as,
// and passes the application role.

func randomSuffix(t *testing.T) string {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func mustOpen(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// refused runs each statement on db and wants every one refused by the server.
func refused(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := db.ExecContext(ctx, s)
		cancel()
		if err == nil {
			t.Errorf("the application role could run %q", s)
		} else {
			t.Logf("refused as it should be: %s: %v", strings.SplitN(s, "\n", 2)[0], err)
		}
	}
}

// fencedWrites does the ordinary fenced writes through the fenced pool: insert,
// update, a stale update refused, delete, a stale re-insert refused (tombstone).
func fencedWrites(t *testing.T, db *sql.DB, ph func(int) string) {
	t.Helper()
	bg := context.Background()
	at := func(tok uint64) context.Context { return fencedsql.WithToken(bg, tok) }
	if _, err := db.ExecContext(at(5), "INSERT INTO ledger (id, amount) VALUES ("+ph(1)+", "+ph(2)+")", 1, 10); err != nil {
		t.Fatalf("fenced INSERT: %v", err)
	}
	if _, err := db.ExecContext(at(7), "UPDATE ledger SET amount = amount + 1 WHERE id = "+ph(1), 1); err != nil {
		t.Fatalf("fenced UPDATE: %v", err)
	}
	if _, err := db.ExecContext(at(6), "UPDATE ledger SET amount = 0 WHERE id = "+ph(1), 1); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v, want ErrFenced", err)
	}
	if _, err := db.ExecContext(at(8), "DELETE FROM ledger WHERE id = "+ph(1), 1); err != nil {
		t.Fatalf("fenced DELETE: %v", err)
	}
	if _, err := db.ExecContext(at(7), "INSERT INTO ledger (id, amount) VALUES ("+ph(1)+", "+ph(2)+")", 1, 10); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale re-INSERT of a deleted row: %v, want ErrFenced", err)
	}
	if _, err := db.ExecContext(at(9), "INSERT INTO ledger (id, amount) VALUES ("+ph(1)+", "+ph(2)+")", 1, 11); err != nil {
		t.Fatalf("newer re-INSERT: %v", err)
	}
}

// checkRoles runs schema.Check with roles and returns the problems of the one table.
func checkRoles(t *testing.T, db *sql.DB, d dialect.Dialect, roles dialect.Roles) []string {
	t.Helper()
	reports, err := schema.Check(schema.WithRoles(context.Background(), roles), db, d, schema.GuardSpec{Table: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	return reports[0].Problems
}

func TestLeastPrivilegePostgres(t *testing.T) {
	admin := testdb.NeedServer(t, testdb.EnvPostgres, "PostgreSQL")
	sfx := randomSuffix(t)
	owner, app, pw := "fsql_owner_"+sfx, "fsql_app_"+sfx, "pw_"+sfx
	adb := mustOpen(t, "pgx", admin)
	if _, err := adb.Exec(`CREATE ROLE ` + owner + ` NOLOGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := adb.Exec(`CREATE ROLE ` + app + ` LOGIN PASSWORD '` + pw + `'`); err != nil {
		t.Fatal(err)
	}
	// Registered before the database: runs after it was dropped (cleanups run last
	// in, first out), when the roles own nothing any more.
	t.Cleanup(func() {
		if _, err := adb.Exec(`DROP ROLE IF EXISTS ` + app + `, ` + owner); err != nil {
			t.Errorf("dropping roles: %v", err)
		}
	})
	dsn := testdb.Postgres(t)
	execRaw(t, "pgx", dsn, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)")

	args := []string{"-driver", "postgres", "-dsn", dsn, "-tables", "ledger", "-owner", owner, "-app-role", app}
	code, out, errOut := runCmd(t, append(args, "-print")...)
	if code != exitProblems {
		t.Fatalf("-print: exit %d\n%s\n%s", code, out, errOut)
	}
	wantContains(t, "-print", out, `ALTER TABLE "public"."ledger" OWNER TO "`+owner+`";`, `ALTER FUNCTION "fencedsql_guard_ledger"() OWNER TO`,
		`ALTER FUNCTION "public"."fencedsql_tombstone_ledger"() OWNER TO`, `ALTER TABLE "public"."fencedsql_tomb_ledger" OWNER TO`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON "public"."ledger" TO "`+app+`";`)
	code, out, errOut = runCmd(t, append(args, "-apply")...)
	if code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	wantContains(t, "-apply", out, "now:\nledger: OK\n")
	if code, out, _ := runCmd(t, args...); code != exitOK || out != "ledger: OK\n" {
		t.Fatalf("re-check: exit %d\n%s", code, out)
	}

	// The application role, logged in.
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("the test needs a URL DSN in %s: %v", testdb.EnvPostgres, err)
	}
	u.User = url.UserPassword(app, pw)
	appDSN := u.String()
	fenced := mustOpen(t, "fenced-pgx", appDSN+"&fenced_tables=ledger")
	fencedWrites(t, fenced, func(i int) string { return "$" + string(rune('0'+i)) })

	plain := mustOpen(t, "pgx", appDSN)
	var who string
	if err := plain.QueryRow("SELECT current_user").Scan(&who); err != nil || who != app {
		t.Fatalf("logged in as %q (%v), want %s", who, err, app)
	}
	// The application role may call the fence function: its DELETEs are one statement.
	fq, fargs := postgres.Dialect.(dialect.DeleteFencer).DeleteFenceQuery(dialect.TableName{Name: "ledger"})
	var ready int
	if err := plain.QueryRow(fq, fargs...).Scan(&ready); err != nil || ready != 1 {
		t.Errorf("DeleteFenceQuery as the application role: %d, %v; want 1", ready, err)
	}
	// It may read the row-security verdict of the two-statement DELETE and the claims
	// (no row security on ledger: yes, and not in force).
	rq, rargs := postgres.Dialect.(dialect.TwoStepDeleteChecker).TwoStepDeleteQuery(dialect.TableName{Name: "ledger"})
	var why sql.NullString
	var rls int
	if err := plain.QueryRow(rq, rargs...).Scan(&ready, &why, &rls); err != nil || ready != 1 || rls != 0 {
		t.Errorf("TwoStepDeleteQuery as the application role: %d (%v), row security %d, %v; want 1, 0", ready, why, rls, err)
	}
	refused(t, plain,
		`DROP FUNCTION fencedsql_guard_ledger() CASCADE`,
		`DROP FUNCTION fencedsql_tombstone_ledger() CASCADE`,
		`CREATE OR REPLACE FUNCTION fencedsql_guard_ledger() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
		`CREATE OR REPLACE FUNCTION fencedsql_tombstone_ledger() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
		`DROP TRIGGER fencedsql_guard ON ledger`,
		`DROP TRIGGER fencedsql_tombstone_insert ON ledger`,
		`ALTER TABLE ledger DISABLE TRIGGER fencedsql_guard`,
		`ALTER TABLE ledger DISABLE TRIGGER ALL`,
		`ALTER TABLE ledger ENABLE REPLICA TRIGGER fencedsql_tombstone_insert`,
		`CREATE TRIGGER aaa BEFORE UPDATE ON ledger FOR EACH ROW EXECUTE FUNCTION fencedsql_guard_ledger()`,
		`INSERT INTO fencedsql_tomb_ledger (id, fence_token) VALUES (2, 1)`,
		`UPDATE fencedsql_tomb_ledger SET fence_token = 0`,
		`DELETE FROM fencedsql_tomb_ledger`,
		`TRUNCATE fencedsql_tomb_ledger`,
		`TRUNCATE ledger`,
		`DROP TABLE ledger`,
		`DROP TABLE fencedsql_tomb_ledger`,
		`ALTER TABLE ledger ALTER COLUMN fence_token DROP NOT NULL`,
		`SET session_replication_role = replica`,
		`CREATE SCHEMA evil`,
		`CREATE FUNCTION public.always(bigint, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true'`,
	)
	// A plain UPDATE that skips the protocol is still the guard's to refuse.
	if _, err := plain.Exec("UPDATE ledger SET amount = 0"); err == nil || !postgres.IsGuardError(err) {
		t.Errorf("plain UPDATE as the application role: %v, want the guard's refusal", err)
	}

	// schema.Check with roles: the superuser the tests run as is flagged; the
	// application role passes; so does the application role judged from its own
	// connection (Roles.App "" is the connection's role).
	adminDB := mustOpen(t, "pgx", dsn)
	if p := checkRoles(t, adminDB, postgres.Dialect, dialect.Roles{App: "fenced"}); len(p) != 1 || !strings.Contains(p[0], "is a superuser") {
		t.Errorf("superuser application role: problems %q, want the superuser flagged", p)
	}
	if p := checkRoles(t, adminDB, postgres.Dialect, dialect.Roles{App: app, Owner: owner}); len(p) != 0 {
		t.Errorf("application role: problems %q", p)
	}
	if p := checkRoles(t, plain, postgres.Dialect, dialect.Roles{}); len(p) != 0 {
		t.Errorf("application role on its own connection: problems %q", p)
	}
	// The owner role as the application: flagged as owner of everything.
	if p := checkRoles(t, adminDB, postgres.Dialect, dialect.Roles{App: owner}); len(p) < 4 || !strings.Contains(strings.Join(p, "\n"), "owns the guarded table") {
		t.Errorf("owner as application role: problems %q", p)
	}
	// Dangerous rights given to the application are found, and -apply takes them back.
	execRaw(t, "pgx", dsn,
		"GRANT TRIGGER, TRUNCATE ON ledger TO "+app,
		"GRANT INSERT, DELETE ON fencedsql_tomb_ledger TO "+app,
		"GRANT CREATE ON SCHEMA public TO "+app,
		"GRANT "+owner+" TO "+app,
	)
	code, out, _ = runCmd(t, args...)
	if code != exitProblems {
		t.Fatalf("dangerous grants: exit %d\n%s", code, out)
	}
	wantContains(t, "dangerous grants", out, "has TRIGGER, TRUNCATE on public.ledger", "on the tombstone table public.fencedsql_tomb_ledger: it could erase",
		"can CREATE in schema public", "is a member of "+owner, "REVOKE \""+owner+"\" FROM \""+app+"\";")
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
		t.Fatalf("-apply after dangerous grants: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestLeastPrivilegeMariaDB(t *testing.T) {
	admin := testdb.NeedServer(t, testdb.EnvMySQL, "MySQL/MariaDB")
	dsn := testdb.MySQL(t)
	sfx := randomSuffix(t)
	owner, app, pw := "fsql_owner_"+sfx, "fsql_app_"+sfx, "pw_"+sfx
	adminDSN, err := gomysql.ParseDSN(admin)
	if err != nil {
		t.Fatal(err)
	}
	adminDSN.DBName = ""
	adb := mustOpen(t, "mysql", adminDSN.FormatDSN())
	for _, s := range []string{
		"CREATE USER '" + owner + "'@'%' ACCOUNT LOCK",
		"CREATE USER '" + app + "'@'%' IDENTIFIED BY '" + pw + "'",
	} {
		if _, err := adb.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() {
		if _, err := adb.Exec("DROP USER IF EXISTS '" + app + "'@'%', '" + owner + "'@'%'"); err != nil {
			t.Errorf("dropping accounts: %v", err)
		}
	})
	execRaw(t, "mysql", dsn, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL) ENGINE=InnoDB")

	args := []string{"-driver", "mysql", "-dsn", dsn, "-tables", "ledger", "-owner", owner, "-app-role", app}
	code, out, errOut := runCmd(t, append(args, "-print")...)
	if code != exitProblems {
		t.Fatalf("-print: exit %d\n%s\n%s", code, out, errOut)
	}
	// Each trigger is created twice, its shadow first (dialects/mysql: replaceTrigger).
	if n := strings.Count(out, "CREATE DEFINER = '"+owner+"'@'%' TRIGGER `"); n != 12 || strings.Contains(out, "CREATE TRIGGER") {
		t.Errorf("-print: %d triggers created with the owner as DEFINER, want all 6 (guard, floor, four tombstone) and their shadows:\n%s", n, out)
	}
	wantContains(t, "-print", out, "CREATE DEFINER = '"+owner+"'@'%' TRIGGER `fencedsql_guard_ledger`",
		"CREATE DEFINER = '"+owner+"'@'%' FUNCTION `", "GRANT EXECUTE ON FUNCTION `",
		"CREATE DEFINER = '"+owner+"'@'%' PROCEDURE `", "GRANT EXECUTE ON PROCEDURE `",
		"GRANT TRIGGER, SELECT ON `", "GRANT SELECT, INSERT, UPDATE ON `", "GRANT SELECT, INSERT, UPDATE, DELETE ON `")
	code, out, errOut = runCmd(t, append(args, "-apply")...)
	if code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	wantContains(t, "-apply", out, "now:\nledger: OK\n")
	if code, out, _ := runCmd(t, args...); code != exitOK || out != "ledger: OK\n" {
		t.Fatalf("re-check: exit %d\n%s", code, out)
	}

	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = app, pw
	appDSN := cfg.FormatDSN()
	fenced := mustOpen(t, "fenced-mysql", appDSN+"&fenced_tables=ledger")
	fencedWrites(t, fenced, func(int) string { return "?" })

	plain := mustOpen(t, "mysql", appDSN)
	var who string
	if err := plain.QueryRow("SELECT CURRENT_USER()").Scan(&who); err != nil || who != app+"@%" {
		t.Fatalf("logged in as %q (%v), want %s@%%", who, err, app)
	}
	// The application account may call the fence function but not read its body (the
	// owner is its definer): a fence it cannot judge is not trusted, its DELETEs are two
	// statements (red-team rt60b F3). With the right to read every routine's body
	// (SELECT on mysql.proc) they are one statement.
	fq, fargs := mysql.Dialect.(dialect.DeleteFencer).DeleteFenceQuery(dialect.TableName{Name: "ledger"})
	var ready int
	if err := plain.QueryRow(fq, fargs...).Scan(&ready); err != nil || ready != 0 {
		t.Errorf("DeleteFenceQuery as the application account, which cannot read the fence function's body: %d, %v; want 0", ready, err)
	}
	if _, err := adb.Exec("GRANT SELECT ON mysql.proc TO '" + app + "'@'%'"); err != nil {
		t.Fatal(err)
	}
	if err := plain.QueryRow(fq, fargs...).Scan(&ready); err != nil || ready != 1 {
		t.Errorf("DeleteFenceQuery as the application account with SELECT on mysql.proc: %d, %v; want 1", ready, err)
	}
	refused(t, plain,
		"DROP TRIGGER fencedsql_guard_ledger",
		"DROP TRIGGER fencedsql_tombins_ledger",
		"CREATE TRIGGER fencedsql_evil BEFORE INSERT ON ledger FOR EACH ROW SET NEW.fence_token = 9223372036854775807",
		"INSERT INTO fencedsql_tomb_ledger (id, fence_token, deleted_at) VALUES (2, 1, NOW())",
		"UPDATE fencedsql_tomb_ledger SET fence_token = 0",
		"UPDATE fencedsql_floor SET floor = 0",
		"DELETE FROM fencedsql_floor",
		"DELETE FROM fencedsql_tomb_ledger",
		"TRUNCATE TABLE fencedsql_tomb_ledger",
		"TRUNCATE TABLE ledger",
		"DROP TABLE ledger",
		"DROP TABLE fencedsql_tomb_ledger",
		"ALTER TABLE ledger MODIFY fence_token BIGINT NULL",
		"RENAME TABLE fencedsql_tomb_ledger TO t_old",
		"CREATE TEMPORARY TABLE fencedsql_tomb_ledger (id BIGINT PRIMARY KEY, fence_token BIGINT, deleted_at DATETIME(6))",
		"SET GLOBAL log_bin_trust_function_creators = 1",
	)
	if _, err := plain.Exec("UPDATE ledger SET amount = 0"); err == nil || !mysql.IsGuardError(err) {
		t.Errorf("plain UPDATE as the application account: %v, want the guard's refusal", err)
	}
	// A claim of an absent key as the application account records it through the
	// recorder (EXECUTE granted by -apply): an older INSERT of the key is refused.
	// Without EXECUTE the claim fails with the server's permission error, a denial.
	claimAbsent := func(tok uint64, id int) error {
		ctx := fencedsql.WithToken(context.Background(), tok)
		tx, err := fenced.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck
		var got int64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM ledger WHERE id = ? FOR UPDATE", id).Scan(&got); !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("claim of absent key %d: %v, want sql.ErrNoRows", id, err)
		}
		return tx.Commit()
	}
	if err := claimAbsent(900, 4242); err != nil {
		t.Fatalf("claim of an absent key as the application account: %v", err)
	}
	if _, err := fenced.ExecContext(fencedsql.WithToken(context.Background(), 800), "INSERT INTO ledger (id, amount) VALUES (4242, 1)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("INSERT under 800 of a key claimed absent under 900 as the application account: %v, want ErrFenced", err)
	}
	execRaw(t, "mysql", dsn, "REVOKE EXECUTE ON PROCEDURE `"+cfg.DBName+"`.`fencedsql_tombclaim_ledger` FROM '"+app+"'@'%'")
	if err := claimAbsent(900, 4343); err == nil || !strings.Contains(err.Error(), "1370") {
		t.Errorf("claim of an absent key without EXECUTE on the recorder: %v, want the server's permission error 1370", err)
	}
	execRaw(t, "mysql", dsn, "GRANT EXECUTE ON PROCEDURE `"+cfg.DBName+"`.`fencedsql_tombclaim_ledger` TO '"+app+"'@'%'")

	adminDB := mustOpen(t, "mysql", dsn)
	if p := checkRoles(t, adminDB, mysql.Dialect, dialect.Roles{}); len(p) != 1 || !strings.Contains(p[0], "has SUPER") {
		t.Errorf("superuser application account (the connection's own): problems %q, want SUPER flagged", p)
	}
	if p := checkRoles(t, adminDB, mysql.Dialect, dialect.Roles{App: app, Owner: owner}); len(p) != 0 {
		t.Errorf("application account: problems %q", p)
	}
	// (Not from the application's own connection: the tombstone table it has no
	// right on is invisible to it in information_schema, so the tombstone guard looks
	// missing. Run the check as an administrator, naming the application account.)
	// Dangerous rights given to the application are found; -apply revokes those a
	// statement can, and a database-wide write stays a problem.
	db := cfg.DBName
	execRaw(t, "mysql", dsn,
		"GRANT TRIGGER ON `"+db+"`.`ledger` TO '"+app+"'@'%'",
		"GRANT INSERT ON `"+db+"`.`fencedsql_tomb_ledger` TO '"+app+"'@'%'",
		"GRANT CREATE TEMPORARY TABLES, DELETE ON `"+db+"`.* TO '"+app+"'@'%'",
	)
	code, out, _ = runCmd(t, args...)
	if code != exitProblems {
		t.Fatalf("dangerous grants: exit %d\n%s", code, out)
	}
	wantContains(t, "dangerous grants", out, "has TRIGGER on", "has INSERT on the tombstone table", "has CREATE TEMPORARY TABLES on database", "has DELETE on database")
	code, out, _ = runCmd(t, append(args, "-apply")...)
	if code != exitProblems {
		t.Fatalf("-apply after dangerous grants: exit %d\n%s", code, out)
	}
	after := out[strings.Index(out, "now:"):]
	if !strings.Contains(after, "ledger: 1 problem(s)\n  - application account "+app+"@% has DELETE on database") {
		t.Errorf("-apply after dangerous grants:\n%s", out)
	}
	// A trigger whose DEFINER is not the owner is re-created with it: the same body
	// (another body is a weakened guard, a door of its own), created by this account.
	var body string
	dsnDB := testdb.Open(t, "mysql", dsn)
	if err := dsnDB.QueryRow("SELECT ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME = 'fencedsql_tombdel_ledger'").Scan(&body); err != nil {
		t.Fatal(err)
	}
	execRaw(t, "mysql", dsn, "REVOKE DELETE ON `"+db+"`.* FROM '"+app+"'@'%'", "DROP TRIGGER fencedsql_tombdel_ledger",
		"CREATE TRIGGER fencedsql_tombdel_ledger AFTER DELETE ON ledger FOR EACH ROW\n"+body)
	code, out, _ = runCmd(t, append(args, "-apply")...)
	if code != exitOK || !strings.Contains(out, "trigger fencedsql_tombdel_ledger runs as ") {
		t.Fatalf("foreign DEFINER: exit %d\n%s", code, out)
	}
}

func TestRolesUsage(t *testing.T) {
	dsn := sqliteDSN(t)
	for _, args := range [][]string{
		{"-driver", "sqlite", "-dsn", dsn, "-tables", "t", "-app-role", "app"},
		{"-driver", "sqlite", "-dsn", dsn, "-tables", "t", "-owner", "o"},
		{"-driver", "postgres", "-dsn", "postgres://x@127.0.0.1:1/db", "-tables", "t", "-owner", "o"},
		{"-driver", "postgres", "-dsn", "postgres://x@127.0.0.1:1/db", "-tables", "t", "-app-role", " "},
		{"-driver", "postgres", "-dsn", "postgres://x@127.0.0.1:1/db", "-tables", "t", "-app-role", "a", "-purge-tombstones", "1h"},
	} {
		if code, _, errOut := runCmd(t, args...); code != exitUsage || !strings.Contains(errOut, "usage:") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}
