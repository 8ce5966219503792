package fencedsql_test

// Configuration mistakes that left a table unguarded, or a check off, without a word
// (red-team rt34d; docs/design.md G13 "The listed tables are asserted whatever the
// options"), on SQLite. The PostgreSQL and MariaDB variants are in
// dialects/postgres/listed_tables_test.go and dialects/mysql/config_silent_test.go.

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// accountsAt10SQLite creates accounts with row 1 written under token 10, through the
// plain driver, and returns the file's path and a plain pool over it.
func accountsAt10SQLite(t *testing.T) (string, *sql.DB) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.db")
	raw, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, q := range []string{
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 1, 10, 1)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	return p, raw
}

// staleWriteSQLite sends an UPDATE of row 1 under token 5 (the row holds 10) and returns
// its error and the row's balance and token afterwards.
func staleWriteSQLite(t *testing.T, db, raw *sql.DB) (error, int64, int64) {
	t.Helper()
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), "UPDATE accounts SET balance = 99 WHERE id = 1")
	var b, tok int64
	if qerr := raw.QueryRow("SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&b, &tok); qerr != nil {
		t.Fatal(qerr)
	}
	return err, b, tok
}

// TestListedTableCheckedWithSchemaCheckOffSQLite (fail-open). fenced_tables=acounts
// (a typo of accounts) is refused at the pool's first connection with ErrSchema ("no
// such table") — G13: "fenced_tables stays as an assertion". Add
// fenced_schema_check=false (or WithSchemaCheck(false), or =0) and the assertion is
// skipped altogether (registry.go returns before checkListed when the check is off):
// the pool opens, nothing is logged, and a stale write (token 5 over a row at 10) to
// the real table accounts changes the row. The option is documented as turning off the
// lazy column/session checks for mock drivers, and "a record the database answered
// with a problem" still fails the pool; here the database would answer "no such table"
// but is never asked.
//
// Right behaviour: the listed tables' existence is asserted whatever the schema check
// says (a query that fails — a mock's — may be logged, as the records' reads are; a
// real "no such table" answer fails the pool with ErrSchema), so the stale write is
// refused with ErrSchema and the row keeps balance 1.
func TestListedTableCheckedWithSchemaCheckOffSQLite(t *testing.T) {
	for _, off := range []string{"false", "0"} {
		t.Run(off, func(t *testing.T) {
			p, raw := accountsAt10SQLite(t)
			db, err := sql.Open("fenced-sqlite", "file:"+p+"?fenced_tables=acounts&fenced_schema_check="+off)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err, b, tok := staleWriteSQLite(t, db, raw)
			if err == nil || b != 1 {
				t.Errorf("fenced_tables=acounts (typo) with fenced_schema_check=%s: stale write under token 5 returned %v and left balance %d (token %d); want ErrSchema naming the missing listed table, row unchanged", off, err, b, tok)
			} else if !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("refused with %v; want ErrSchema", err)
			}
		})
	}
}

// TestListedTableMissingWithDDLRefusesWritesSQLite (fail-open). With fenced_allow=ddl a
// listed table that does not exist is only logged at Warn ("a listed table does not
// exist yet"), since the pool may be the one that creates it. But a pool opened with
// sql.Open has no way to be given a logger, and the default logger discards: so
// fenced_tables=acounts&fenced_allow=ddl (a typo in a migration-capable pool, the
// minimal set-up: no registry, no guard) opens without a word, and a stale write to
// the real table accounts goes through. The G13 text covers the typo only "when
// [the registry or the guard's triggers] records it".
//
// Right behaviour: a listed table that does not exist must not leave the pool
// silently unguarded: until every listed table exists, refuse the pool's writes other
// than DDL (re-checking at each, so the pool that creates its tables works), with
// ErrSchema naming the missing listed table — here the stale write is refused and the
// row keeps balance 1.
func TestListedTableMissingWithDDLRefusesWritesSQLite(t *testing.T) {
	p, raw := accountsAt10SQLite(t)
	db, err := sql.Open("fenced-sqlite", "file:"+p+"?fenced_tables=acounts&fenced_allow=ddl")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err, b, tok := staleWriteSQLite(t, db, raw)
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "acounts") || b != 1 {
		t.Errorf("fenced_tables=acounts (typo) with fenced_allow=ddl: stale write under token 5 returned %v and left balance %d (token %d); want it refused (ErrSchema naming acounts), row unchanged", err, b, tok)
	}
}

// TestListedTableCreatedThroughThePoolSQLite: a pool allowed to run DDL that creates
// its listed table (the case WithDDL's leniency is for) reads, and creates the table,
// while it does not exist, and then writes it fenced: the refusal ends with the table's
// absence.
func TestListedTableCreatedThroughThePoolSQLite(t *testing.T) {
	p, _ := accountsAt10SQLite(t)
	db, err := sql.Open("fenced-sqlite", "file:"+p+"?fenced_tables=ledger&fenced_allow=ddl")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := fencedsql.WithToken(context.Background(), 7)
	if _, err := db.ExecContext(ctx, "INSERT INTO ledger (id) VALUES (1)"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("INSERT before the listed ledger exists: %v, want ErrSchema", err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM accounts").Scan(&n); err != nil || n != 1 {
		t.Fatalf("a read while ledger is missing: %d, %v; want it to pass", n, err)
	}
	if _, err := db.Exec(`CREATE TABLE ledger (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatalf("CREATE TABLE ledger while it is missing: %v, want it to pass (DDL)", err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO ledger (id) VALUES (1)"); err != nil {
		t.Fatalf("INSERT after ledger was created: %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), "UPDATE ledger SET id = 1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE of the created ledger: %v, want ErrFenced (guarded)", err)
	}
	if _, err := db.Exec("UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatalf("a write of an unlisted table once ledger exists: %v", err)
	}
}

// TestChecksOffLoggedSQLite (cosmetic / operational: the switch that turns
// the safety checks off is silent). fenced_schema_check=false, fenced_allow=ddl and
// fenced_allow=dynamic_sql each turn a check off; a pool opened with them, given a
// logger, logs nothing at its first connection or its first guarded write (only a
// refused statement or a missing listed table is ever logged). A production DSN copied
// from a test set-up runs without the session and column checks and nobody sees it.
//
// Right behaviour: a pool that runs with a check off says so once, at Warn, at its
// first connection, naming the parameter or option that turned it off (checksoff.go).
func TestChecksOffLoggedSQLite(t *testing.T) {
	for _, c := range []struct{ param, want string }{
		{"fenced_schema_check=false", "schema"},
		{"fenced_allow=ddl", "ddl"},
		{"fenced_allow=dynamic_sql", "dynamic"},
	} {
		t.Run(c.param, func(t *testing.T) {
			p, _ := accountsAt10SQLite(t)
			var buf bytes.Buffer
			l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+p+"?fenced_tables=accounts&"+c.param),
				fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithLogger(l))
			defer db.Close()
			if err := db.Ping(); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if out := strings.ToLower(buf.String()); !strings.Contains(out, c.want) || !strings.Contains(out, "level=warn") || !strings.Contains(out, "the dsn parameter "+c.param) {
				t.Errorf("pool opened with %s logged %q; want a Warn at its first connection saying the check is off", c.param, buf.String())
			}
		})
	}
}

// TestAlreadyFencedConnectorRefused (over-refusal with an unclear error). A fenced
// pool's connector (sql.Open("fenced-sqlite", …), its driver's OpenConnector — what
// instrumentation wrappers pass around) opened again with fencedsql.OpenDB and a Guard:
// every statement is rewritten twice. Ping, a stale UPDATE (fenced) and a fresh one
// work, but a plain keyed DELETE under a valid token is refused with "a DELETE whose
// WHERE reads "fence_token" (use fencedsql.ExpectVersion …)" — the inner wrapper
// judging the outer one's rewrite. Nothing fails open, but the error blames the
// caller's statement for a configuration mistake it cannot see.
//
// Right behaviour: OpenDB (and Register/Wrap) over a connector or driver that is
// already this package's is a *ConfigError at first use ("the connector is already
// fenced: open it with sql.OpenDB, or wrap the plain driver"), or the double wrap is
// collapsed; the DELETE is then either never reached or runs.
func TestAlreadyFencedConnectorRefused(t *testing.T) {
	p, raw := accountsAt10SQLite(t)
	dsn := "file:" + p + "?fenced_tables=accounts"
	inner, err := sql.Open("fenced-sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	c, err := inner.Driver().(driver.DriverContext).OpenConnector(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := fencedsql.OpenDB(c, fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("accounts"))
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 20), "DELETE FROM accounts WHERE id = 1")
	var ce *fencedsql.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "already fenced") {
		t.Errorf("OpenDB over an already fenced connector: DELETE returned %v; want a *ConfigError (already fenced)", err)
	}
	var n int
	if qerr := raw.QueryRow("SELECT count(*) FROM accounts").Scan(&n); qerr != nil || n != 1 {
		t.Fatalf("rows left: %d, %v; want 1 (nothing sent)", n, qerr)
	}
	// Wrap over the fenced driver, and OpenDB over a DSNConnector of it, likewise.
	name := fmt.Sprintf("fenced-twice-%d", time.Now().UnixNano())
	fencedsql.Register(name, inner.Driver(), fencedsql.WithDialect(sqlite.Dialect))
	if twice, err := sql.Open(name, dsn); err == nil {
		twice.Close()
		t.Errorf("sql.Open over Register(fenced driver): no error; want a *ConfigError")
	} else if !errors.As(err, &ce) {
		t.Errorf("sql.Open over Register(fenced driver): %v; want a *ConfigError", err)
	}
	db2 := fencedsql.OpenDB(fencedsql.DSNConnector(inner.Driver(), dsn), fencedsql.WithDialect(sqlite.Dialect))
	defer db2.Close()
	if err := db2.Ping(); !errors.As(err, &ce) {
		t.Errorf("OpenDB(DSNConnector(fenced driver)): Ping %v; want a *ConfigError", err)
	}
}

// TestSchemaRecheckZeroChecksEveryWrite (fail-open on a configuration slip).
// WithSchemaRecheck(d) with d <= 0 keeps the lazy check's verdict for the pool's life,
// so the zero value of a time.Duration — WithSchemaRecheck(cfg.SchemaRecheck) with the
// field left unset, or 0 written meaning "do not cache" — silently turns the periodic
// re-check off, the least safe setting, with nothing logged. Here a migration on a
// plain connection rebuilds accounts with a nullable fence_token after the pool's
// first guarded write; a stale write (token 5 over a row at 10) then stores the
// fencing NULL instead of failing, however long after the migration.
//
// Right behaviour: 0 means no caching (check before every guarded write) or is a
// *ConfigError; "never re-check" takes an explicit value (a negative duration or a
// named constant) and is logged at the pool's first connection. The stale write is
// refused (ErrSchema: nullable fence_token) and the row keeps balance 1.
func TestSchemaRecheckZeroChecksEveryWrite(t *testing.T) {
	p, raw := accountsAt10SQLite(t)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+p+"?fenced_tables=accounts"),
		fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithSchemaRecheck(0))
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 10), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ALTER TABLE accounts RENAME TO accounts_old`,
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT, version BIGINT)`,
		`INSERT INTO accounts SELECT * FROM accounts_old`,
		`DROP TABLE accounts_old`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), "UPDATE accounts SET balance = 99 WHERE id = 1")
	var b int64
	var tok sql.NullInt64
	if qerr := raw.QueryRow("SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&b, &tok); qerr != nil {
		t.Fatal(qerr)
	}
	if err == nil || b != 1 {
		t.Errorf("WithSchemaRecheck(0), fence_token made nullable by a migration: stale write (token 5 over 10) returned %v, row now balance %d token %v; want ErrSchema (0 must not mean \"never re-check\"), row unchanged", err, b, tok)
	}
}

// TestNothingGuardedLoggedSQLite (red-team rt31d F1's broader suggestion): a fenced
// pool with nothing listed on a database that records no guarded table fences
// nothing — every write passes as through the plain driver. It says so once, at
// Warn, at its first connection; a pool that guards a table does not.
func TestNothingGuardedLoggedSQLite(t *testing.T) {
	for _, c := range []struct {
		param string
		warn  bool
	}{{"", true}, {"?fenced_tables=accounts", false}} {
		p, _ := accountsAt10SQLite(t)
		var buf bytes.Buffer
		l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+p+c.param),
			fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithLogger(l))
		if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		out := buf.String()
		if got := strings.Contains(out, "guards no table") && strings.Contains(out, "level=WARN"); got != c.warn {
			t.Errorf("pool over %q logged %q; want the nothing-guarded warning: %v", "file:…"+c.param, out, c.warn)
		}
	}
}
