// Configuration mistakes and raw-connection use that failed open (a red-team pass,
// session 5): each test failed before its fix.

package fencedsql_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/XSAM/otelsql"

	"database/sql"
	"errors"
	_ "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"

	"database/sql/driver"
	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// twoColumnSets makes a SQLite file whose accounts table carries two complete
// sets of fencing columns (a migration that moved from fence_token/version to
// tok/ver and kept the old ones, NOT NULL DEFAULT 0).
func twoColumnSets(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path)
	if _, err := raw.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
		tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO accounts (id, balance) VALUES (1, 0)`); err != nil {
		t.Fatal(err)
	}
	return path
}

func balanceOf(t *testing.T, path string) int64 {
	t.Helper()
	raw := testdb.Open(t, "sqlite", "file:"+path)
	var b int64
	if err := raw.QueryRow(`SELECT balance FROM accounts WHERE id = 1`).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// The registry records accounts with its columns tok/ver; the pool lists the same
// table schema-qualified (main.accounts) with the default columns. G13 says a listed
// table's columns are compared with the registry's ("Register guarded tables so that
// the columns are compared"), but addGuards compares by strings.EqualFold of the names
// as written, so "main.accounts" is never compared with "accounts": the pool opens,
// guards main.accounts on fence_token and accounts (the registry row) on tok. A newer
// holder writes through the unqualified name (tok = 10), and a stale holder (token 5)
// writes through main.accounts, fenced on fence_token (still 0): accepted.
func TestCfgQualifiedListingSkipsRegistryColumns(t *testing.T) {
	ctx := context.Background()
	path := twoColumnSets(t)
	db := registeredPool(t, path, "accounts", "main.accounts")
	if db == nil {
		return // fixed: the listed columns are compared with the registry's
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = 100 WHERE id = 1`); err != nil {
		if errors.Is(err, fencedsql.ErrSchema) {
			return
		}
		t.Fatalf("newer holder (token 10) through the registered name: %v", err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE main.accounts SET balance = -1 WHERE id = 1`)
	if err == nil {
		t.Fatalf("stale holder (token 5) through main.accounts after token 10 wrote: accepted, balance now %d (want ErrFenced, or ErrSchema at open: main.accounts is listed with fence_token/version but registered with tok/ver)", balanceOf(t, path))
	}
	if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("stale write: %v (want ErrFenced or ErrSchema)", err)
	}
}

// The same table guarded twice with different columns — a Register'd Guard and the
// DSN's fenced_tables, or two Guard options — is accepted without a word; the planner
// keeps the first and ignores the second (plan.Planner.Lookup returns gs[0]). With no
// registry (the minimal set-up) nothing ever compares them. A pool told both
// "accounts fenced on tok" and "accounts fenced on fence_token" must refuse the
// configuration (ConfigError), not pick one.
func TestCfgGuardTwiceDifferentColumnsAccepted(t *testing.T) {
	ctx := context.Background()
	path := twoColumnSets(t)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(sqlDriver(t), "file:"+path),
		fencedsql.WithDialect(sqlite.Dialect),
		fencedsql.Guard("accounts"), // default columns fence_token/version
		fencedsql.Guard("accounts", fencedsql.TokenColumn("tok"), fencedsql.VersionColumn("ver")))
	defer db.Close()
	db.SetMaxOpenConns(1)
	err := db.PingContext(ctx)
	if err != nil {
		var ce *fencedsql.ConfigError
		if errors.As(err, &ce) || errors.Is(err, fencedsql.ErrSchema) {
			return // fixed
		}
		t.Fatalf("ping: %v", err)
	}
	// The correctly configured pool (tok/ver) of the newer holder.
	good := fencedsql.OpenDB(fencedsql.DSNConnector(sqlDriver(t), "file:"+path),
		fencedsql.WithDialect(sqlite.Dialect),
		fencedsql.Guard("accounts", fencedsql.TokenColumn("tok"), fencedsql.VersionColumn("ver")))
	defer good.Close()
	good.SetMaxOpenConns(1)
	if _, err := good.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = 100 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = -1 WHERE id = 1`)
	if err == nil {
		t.Fatalf("a pool given Guard(accounts) and Guard(accounts, tok/ver) opened without a ConfigError, and its stale write (token 5, after token 10 on tok) was accepted: balance %d", balanceOf(t, path))
	}
}

func sqlDriver(t *testing.T) driver.Driver { t.Helper(); return &msqlite.Driver{} }

// sql.Conn.Raw re-arms the session check (conn.Raw sets sessionOK = false) but not the
// name checks (conn.rearmNames): a search_path changed on the raw connection — pgx's
// own Exec, as Unwrap's documentation shows for LISTEN — leaves the pool's cached
// verdict on "accounts" (public.accounts: NOT NULL fencing columns) in force for a name
// that now resolves to s2.accounts, whose fencing columns are nullable. The fenced
// UPDATE then stores the refused token as NULL and reports success: a stale write
// accepted. The same statement after `SET search_path` sent through the pool is
// refused with ErrSchema (RunGuards/Resolve).
func TestCfgRawSearchPathKeepsPoolVerdict(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 0, 0, 0)`,
		`CREATE SCHEMA s2`,
		`CREATE TABLE s2.accounts (id BIGINT PRIMARY KEY, balance BIGINT, fence_token BIGINT, version BIGINT)`,
		`INSERT INTO s2.accounts VALUES (1, 100, 50, 1)`,
	)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"))
	defer db.Close()
	db.SetMaxOpenConns(1)
	// The pool's verdict on "accounts" (public.accounts), by a fenced write.
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 60), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		pc := fencedsql.Unwrap(dc).(*stdlib.Conn).Conn()
		_, err := pc.Exec(ctx, "SET search_path = s2, public")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_, err = c.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = -1 WHERE id = 1`)
	var bal sql.NullInt64
	var tok sql.NullInt64
	_ = raw.QueryRowContext(ctx, `SELECT balance, fence_token FROM s2.accounts WHERE id = 1`).Scan(&bal, &tok)
	if err == nil {
		t.Fatalf("stale UPDATE (token 10) after a search_path change on the raw connection: accepted; s2.accounts row 1 now balance %v fence_token %v (its token was 50); want ErrSchema (nullable fencing columns) or ErrFenced", bal, tok)
	}
	if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v (want ErrSchema or ErrFenced)", err)
	}
}

// Raw re-arms the session check, but under pgx the check takes synchronous_commit from
// the value postgres.TrackedSession read once per connection and keeps in pgconn's
// CustomData: a `SET synchronous_commit = off` made on the raw connection after the
// connection's first guarded write is never seen, and the next guarded write is
// accepted on a session whose commits are acknowledged before a synchronous standby
// has them (G14: "the session check refuses guarded writes on a connection that has
// them … from Conn.Raw"). The same SET sent through the pool is refused, and set before
// the connection's first guarded write (on Raw, or from the DSN) it is caught.
func TestCfgRawSyncCommitOffAfterFirstWrite(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 0, 0, 0)`,
	)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"))
	defer db.Close()
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(fencedsql.WithToken(ctx, 60), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	var setting string
	if err := c.Raw(func(dc any) error {
		pc := fencedsql.Unwrap(dc).(*stdlib.Conn).Conn()
		if _, err := pc.Exec(ctx, "SET synchronous_commit = off"); err != nil {
			return err
		}
		return pc.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting)
	}); err != nil {
		t.Fatal(err)
	}
	if setting != "off" {
		t.Fatalf("synchronous_commit on the raw connection: %q", setting)
	}
	_, err = c.ExecContext(fencedsql.WithToken(ctx, 61), `UPDATE accounts SET balance = 2 WHERE id = 1`)
	if err == nil {
		t.Fatal("guarded write on a session with synchronous_commit = off (set on Raw after the connection's first guarded write): accepted; want *SessionError (ErrSchema), as for the same SET through the pool or before the first write")
	}
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("guarded write with synchronous_commit = off: %v (want ErrSchema)", err)
	}
}

// The Raw name-resolution gap on SQLite: a TEMP table created on the raw connection
// shadows main.accounts for unqualified names (SQLite resolves temp first), and the
// pool's cached verdict on "accounts" (main: NOT NULL fencing columns) covers it. The
// same CREATE TEMP TABLE through the pool is refused (DDL naming a guarded table).
func TestCfgRawTempTableShadowsSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	db := testdb.Open(t, "fenced-sqlite", "file:"+path+"?fenced_tables=accounts")
	db.SetMaxOpenConns(1)
	rawdb, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rawdb.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0); INSERT INTO accounts (id) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	rawdb.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(fencedsql.WithToken(ctx, 60), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if err := c.Raw(func(dc any) error {
		rc := fencedsql.Unwrap(dc).(driver.ExecerContext)
		_, err := rc.ExecContext(ctx, `CREATE TEMP TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER, fence_token BIGINT, version BIGINT)`, nil)
		if err != nil {
			return err
		}
		_, err = rc.ExecContext(ctx, `INSERT INTO temp.accounts VALUES (1, 100, 50, 1)`, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_, err = c.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = -1 WHERE id = 1`)
	if err == nil {
		var bal, tok sql.NullInt64
		_ = c.QueryRowContext(ctx, `SELECT balance, fence_token FROM temp.accounts WHERE id = 1`).Scan(&bal, &tok)
		t.Fatalf("stale UPDATE (token 10) after a TEMP accounts was made on Raw: accepted; temp.accounts row now balance %v fence_token %v (was 50); want ErrSchema or ErrFenced", bal, tok)
	}
	if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v", err)
	}
}

// Maintain takes "the fenced pool db" but accepts any *sql.DB: given the plain pool
// (the admin's usual handle — it is the migration account's), fn's writes go out
// unfenced and unstamped, Maintain reports success, and the promise "a holder whose
// lease was granted before it gets ErrFenced on them" silently does not hold: a holder
// of an older lease overwrites the maintenance write. (With the database-side guard
// installed the plain write fails with ErrGuard instead; without it — the minimal
// set-up — nothing refuses.) Maintain should refuse a db whose driver is not fenced
// (a ConfigError), as it refuses a nil one.
func TestCfgMaintainOnPlainPool(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	plain := testdb.Open(t, "sqlite", "file:"+path)
	if _, err := plain.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0); INSERT INTO accounts (id, fence_token) VALUES (1, 0)`); err != nil {
		t.Fatal(err)
	}
	fenced := testdb.Open(t, "fenced-sqlite", "file:"+path+"?fenced_tables=accounts")
	locks := lockclient.New(memlock.New(), lockclient.WithTTL(5*time.Second))
	defer locks.Close(context.Background())
	old, err := locks.Acquire(ctx, "acc-1") // a holder whose lease predates the maintenance
	if err != nil {
		t.Fatal(err)
	}
	oldTok := old.Token()
	_ = old.Release(ctx)
	err = fencedsql.Maintain(ctx, plain, locks, "acc-1", func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = 500 WHERE id = 1`)
		return err
	})
	if err != nil {
		var ce *fencedsql.ConfigError
		if errors.As(err, &ce) {
			return // fixed: a plain pool is refused
		}
		t.Fatalf("Maintain: %v", err)
	}
	var bal, tok int64
	_ = plain.QueryRow(`SELECT fence_token FROM accounts WHERE id = 1`).Scan(&tok)
	_, err = fenced.ExecContext(fencedsql.WithToken(ctx, oldTok), `UPDATE accounts SET balance = 0 WHERE id = 1`)
	_ = plain.QueryRow(`SELECT balance FROM accounts WHERE id = 1`).Scan(&bal)
	t.Errorf("Maintain on the plain pool reported success (row fence_token %d: unstamped); a holder of the older lease (token %d) then wrote: err %v, balance %d (the maintenance write of 500 is lost); want Maintain to refuse a pool that is not fenced", tok, oldTok, err, bal)
}

// fencedsql.OpenDB(fencedsql.DSNConnector(d, dsn)) never reads this package's DSN
// parameters: DSNConnector hands the DSN to the driver as it is. pgx and
// go-sql-driver/mysql refuse the unknown fenced_tables at connect (their own untyped
// errors, fail-closed), but modernc SQLite ignores unknown query parameters: the pool
// opens with no guarded table, and every write — a stale token's, a tokenless one — goes
// out unfenced. DSNConnector holds the DSN text: it should apply the fenced_ parameters
// (splitDSN) or refuse them with a ConfigError, as sql.Open on a fenced name does.
func TestCfgDSNConnectorDropsFencedParams(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	r, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0); INSERT INTO accounts (id, fence_token) VALUES (1, 50)`); err != nil {
		t.Fatal(err)
	}
	r.Close()
	db := fencedsql.OpenDB(fencedsql.DSNConnector(sqlDriver(t), "file:"+path+"?fenced_tables=accounts"), fencedsql.WithDialect(sqlite.Dialect))
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = -1 WHERE id = 1`)
	if err == nil {
		var b, ft int64
		_ = db.QueryRow(`SELECT balance, fence_token FROM accounts WHERE id = 1`).Scan(&b, &ft)
		t.Fatalf("OpenDB(DSNConnector(modernc, \"…?fenced_tables=accounts\")): a stale UPDATE (token 10 < 50) was accepted (balance %d, fence_token %d): the DSN's fenced_tables was silently ignored; want ErrFenced, or a ConfigError", b, ft)
	}
	var ce *fencedsql.ConfigError
	if !errors.Is(err, fencedsql.ErrFenced) && !errors.As(err, &ce) {
		t.Fatalf("stale UPDATE: %v", err)
	}
}

// The Raw name-resolution gap on MariaDB: `USE other` on the raw connection moves the
// default database; the pool's verdict on "accounts" (this database's, NOT NULL
// fencing columns) covers other.accounts, whose fencing columns are nullable. The
// same `USE` through the pool re-arms the name checks (RunGuards/Resolve).
func TestCfgRawUseOtherDatabaseMariaDB(t *testing.T) {
	ctx := context.Background()
	admin := testdb.NeedServer(t, testdb.EnvMySQL, "MySQL/MariaDB")
	var rnd [5]byte
	_, _ = rand.Read(rnd[:])
	a, b := "cfg_a"+hex.EncodeToString(rnd[:]), "cfg_b"+hex.EncodeToString(rnd[:])
	adb := testdb.Open(t, "mysql", admin,
		"CREATE DATABASE "+a, "CREATE DATABASE "+b,
		"CREATE TABLE "+a+".accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO "+a+".accounts VALUES (1, 0, 0, 0)",
		"CREATE TABLE "+b+".accounts (id BIGINT PRIMARY KEY, balance BIGINT, fence_token BIGINT, version BIGINT)",
		"INSERT INTO "+b+".accounts VALUES (1, 100, 50, 1)",
	)
	t.Cleanup(func() {
		cdb, err := sql.Open("mysql", admin)
		if err != nil {
			return
		}
		defer cdb.Close()
		_, _ = cdb.Exec("DROP DATABASE IF EXISTS " + a)
		_, _ = cdb.Exec("DROP DATABASE IF EXISTS " + b)
	})
	cfg, err := mysqldrv.ParseDSN(admin)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = a
	db := testdb.Open(t, "fenced-mysql", cfg.FormatDSN()+"&fenced_tables=accounts")
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 60), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		_, err := fencedsql.Unwrap(dc).(driver.ExecerContext).ExecContext(ctx, "USE "+b, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_, err = c.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = -1 WHERE id = 1`)
	if err == nil {
		var bal, tok sql.NullInt64
		_ = adb.QueryRow("SELECT balance, fence_token FROM "+b+".accounts WHERE id = 1").Scan(&bal, &tok)
		t.Fatalf("stale UPDATE (token 10) after `USE %s` on Raw: accepted; %s.accounts row now balance %v fence_token %v (was 50); want ErrSchema or ErrFenced", b, b, bal, tok)
	}
	if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v", err)
	}
}

// F3 the other way round: the registry records the table qualified (fencedsql-schema
// -tables main.accounts, with tok/ver), the application lists it unqualified with the
// default columns. Unqualified writes are fenced on fence_token, never compared.
func TestCfgQualifiedRegistrySkipsListedColumns(t *testing.T) {
	ctx := context.Background()
	path := twoColumnSets(t)
	db := registeredPool(t, path, "main.accounts", "accounts")
	if db == nil {
		return // fixed: the listed columns are compared with the registry's
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE main.accounts SET balance = 100 WHERE id = 1`); err != nil {
		if errors.Is(err, fencedsql.ErrSchema) {
			return
		}
		t.Fatalf("newer holder (token 10) through the registered name: %v", err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = -1 WHERE id = 1`)
	if err == nil {
		t.Fatalf("stale holder (token 5) through the listed name after token 10 wrote through the registered one: accepted, balance %d (want ErrFenced, or ErrSchema at open: listed with fence_token/version, registered with tok/ver)", balanceOf(t, path))
	}
	if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("stale write: %v", err)
	}
}

// OpenDB(DSNConnector) reads the DSN's parameters as sql.Open does (a red-team pass:
// it read them only when the DSN contained "fenced_"), while
// sql.Open's splitDSN looks at every key that, decoded and folded, starts with
// "fenced" and refuses a misspelled one ("did you mean fenced_tables?"). A key written
// url-encoded (fenced%5Ftables) or misspelled without the underscore (fencedTables,
// fenced-tables) skips OpenDB's reading altogether and reaches the driver; modernc's
// SQLite ignores unknown parameters, so the pool opens guarding nothing and a
// tokenless write of the table the DSN names passes: the very hole the fix closed for
// "fenced_tables".
func TestCfgOpenDBDSNParamSpellings(t *testing.T) {
	for i, param := range []string{"fenced%5Ftables=accounts", "fenced%5ftables=accounts", "fencedTables=accounts", "fenced-tables=accounts"} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			ctx := context.Background()
			path := twoColumnSets(t)
			db := fencedsql.OpenDB(fencedsql.DSNConnector(sqlDriver(t), "file:"+path+"?"+param), fencedsql.WithDialect(sqlite.Dialect))
			defer db.Close()
			_, err := db.ExecContext(ctx, `UPDATE accounts SET balance = 666 WHERE id = 1`)
			var ce *fencedsql.ConfigError
			if !errors.As(err, &ce) && !errors.Is(err, fencedsql.ErrNoToken) {
				t.Errorf("OpenDB(DSNConnector(…?%s)): tokenless UPDATE accounts: %v (balance now %d); want a ConfigError (as sql.Open gives) or ErrNoToken", param, err, balanceOf(t, path))
			}
		})
	}
}

// The same DSNs through sql.Open with the fenced SQLite driver name: refused (the
// reference behaviour the OpenDB path should match).
func TestCfgSQLOpenDSNParamSpellingsRefused(t *testing.T) {
	for i, param := range []string{"fenced%5Ftables=accounts", "fencedTables=accounts", "fenced-tables=accounts"} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			path := twoColumnSets(t)
			db, err := sql.Open(sqlite.DriverName, "file:"+path+"?"+param)
			if err == nil {
				defer db.Close()
				_, err = db.ExecContext(context.Background(), `UPDATE accounts SET balance = 666 WHERE id = 1`)
			}
			var ce *fencedsql.ConfigError
			if !errors.As(err, &ce) && !errors.Is(err, fencedsql.ErrNoToken) {
				t.Errorf("sql.Open(…?%s): %v", param, err)
			}
		})
	}
}

// Over-refusal found by a red-team pass: Maintain refused a pool whose driver is not fencedsql's
// "under any wrappers that expose theirs with an Unwrap() driver.Driver method
// (otelsql, …)" — but github.com/XSAM/otelsql's driver has no Unwrap method (v0.44.0,
// the version in go.mod): a fenced pool opened through otelsql (otelsql.Open with the
// fenced driver name, or otelsql.OpenDB over a fenced connector) is refused with
// ConfigError "db is not a fenced pool" although every statement it sends is fenced.
func TestCfgMaintainOtelsqlFencedPool(t *testing.T) {
	ctx := context.Background()
	path := twoColumnSets(t)
	db, err := otelsql.Open(sqlite.DriverName, "file:"+path+"?fenced_tables=accounts")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The pool is fenced: a tokenless write is refused.
	if _, err := db.ExecContext(ctx, `UPDATE accounts SET balance = 1 WHERE id = 1`); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatalf("tokenless write through otelsql over the fenced driver: %v; want ErrNoToken", err)
	}
	locks := lockclient.New(memlock.New(), lockclient.WithTTL(5*time.Second))
	defer locks.Close(context.Background())
	err = fencedsql.Maintain(ctx, db, locks, "acc-1", func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = 500 WHERE id = 1`)
		return err
	})
	if err != nil {
		t.Errorf("Maintain on a fenced pool wrapped by otelsql: %v; want it to run", err)
	}
}

// registeredPool records registered in path's registry with the columns tok and ver,
// and opens a one-connection fenced pool listing listed. It returns nil when the pool
// refuses the listing with ErrSchema at its first connection (the columns compared).
func registeredPool(t *testing.T, path, registered, listed string) *sql.DB {
	t.Helper()
	ctx := context.Background()
	raw := testdb.Open(t, "sqlite", "file:"+path)
	if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: registered, TokenColumn: "tok", VersionColumn: "ver"}); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db := testdb.Open(t, "fenced-sqlite", "file:"+path+"?fenced_tables="+listed)
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		if errors.Is(err, fencedsql.ErrSchema) {
			return nil
		}
		t.Fatalf("ping: %v", err)
	}
	return db
}
