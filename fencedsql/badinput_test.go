package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/DATA-DOG/go-sqlmock"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql" // registers "fenced-mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"           // registers "fenced-pgx"
	"github.com/fencedsql/fencedsql/dialects/sqlite"             // registers "fenced-sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// Bad inputs, each through the public API against the embedded SQLite (the row must be
// unchanged afterwards) and against go-sqlmock (nothing may reach the driver), with the
// exact typed error each one gets.

// badKind names the error a bad input must produce.
type badKind int

const (
	badUnsupported badKind = iota // ErrUnsupported, *UnsupportedError
	badSchema                     // ErrSchema, *SchemaError
	badNoToken                    // ErrNoToken, *NoTokenError
	badCanceled                   // context.Canceled
	badArgCount                   // an error about the argument count, none of ours
)

func (k badKind) String() string {
	return [...]string{"ErrUnsupported", "ErrSchema", "ErrNoToken", "context.Canceled", "argument count error"}[k]
}

type badCase struct {
	name string
	kind badKind
	// run executes the bad input on db; ctx carries token 9 unless the case says
	// otherwise.
	run func(ctx context.Context, db *sql.DB) error
	// table is the guarded table a typed error must name ("" to skip the check).
	table string
	// sqliteOnly: the case needs the real schema check (sqlmock runs without it).
	sqliteOnly bool
	// tx: the case begins (and rolls back) a transaction; sqlmock expects both.
	tx bool
	// prepare is the statement the case prepares, as sent to the driver; sqlmock
	// expects that Prepare and nothing after it.
	prepare string
	// check is an extra assertion on the error.
	check func(t *testing.T, err error)
}

func badExec(q string, args ...any) func(context.Context, *sql.DB) error {
	return func(ctx context.Context, db *sql.DB) error {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
}

func badExecCtx(ctx context.Context, q string, args ...any) func(context.Context, *sql.DB) error {
	return func(_ context.Context, db *sql.DB) error {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
}

// badInTx runs q in a transaction begun with txCtx (and executed with the same
// context), then rolls back.
func badInTx(txCtx context.Context, q string, args ...any) func(context.Context, *sql.DB) error {
	return func(_ context.Context, db *sql.DB) error {
		tx, err := db.BeginTx(txCtx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		_, err = tx.ExecContext(txCtx, q, args...)
		return err
	}
}

// badInTxCommit is badInTx that commits when the statement succeeded.
func badInTxCommit(txCtx context.Context, q string, args ...any) func(context.Context, *sql.DB) error {
	return func(_ context.Context, db *sql.DB) error {
		tx, err := db.BeginTx(txCtx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err = tx.ExecContext(txCtx, q, args...); err != nil {
			return err
		}
		return tx.Commit()
	}
}

func badQuery(q string, args ...any) func(context.Context, *sql.DB) error {
	return func(ctx context.Context, db *sql.DB) error {
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}
}

func badPrepared(q string, args ...any) func(context.Context, *sql.DB) error {
	return func(ctx context.Context, db *sql.DB) error {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.ExecContext(ctx, args...)
		return err
	}
}

// badLease is a fencedsql.Lease with a fixed token that is never lost.
type badLease struct{ tok uint64 }

func (l badLease) Token() uint64         { return l.tok }
func (l badLease) Lost() <-chan struct{} { return nil }
func (l badLease) Err() error            { return nil }

func badCases() []badCase {
	bg := context.Background()
	canceled, cancel := context.WithCancel(fencedsql.WithToken(bg, 9))
	cancel()
	huge := uint64(math.MaxInt64) + 1
	return []badCase{
		// ---- malformed SQL on a guarded table ----
		{name: "unterminated string", kind: badUnsupported,
			run: badExec(`UPDATE accounts SET balance = 'oops WHERE id = ?`, 1)},
		{name: "unterminated comment", kind: badUnsupported,
			run: badExec(`UPDATE accounts SET balance = 0 /* WHERE id = ?`, 1)},
		{name: "unterminated quoted identifier", kind: badUnsupported,
			run: badExec(`UPDATE "accounts SET balance = 0`)},
		{name: "NUL byte", kind: badUnsupported,
			run: badExec("UPDATE accounts SET balance = 0\x00 WHERE id = 1")},
		{name: "malformed, through Prepare", kind: badUnsupported,
			run: badPrepared(`DELETE FROM accounts WHERE note = 'oops`)},
		{name: "malformed, through Query", kind: badUnsupported,
			run: badQuery(`UPDATE accounts SET balance = 0 WHERE id = 'oops RETURNING id`)},

		// ---- forms the rewriter cannot fence ----
		{name: "INSERT … SELECT", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts (id, balance) SELECT 2, 0`)},
		{name: "INSERT without a column list", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts VALUES (2, 0, 0, 0)`)},
		{name: "INSERT DEFAULT VALUES", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts DEFAULT VALUES`)},
		{name: "INSERT OR REPLACE", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT OR REPLACE INTO accounts (id, balance) VALUES (1, 0)`)},
		{name: "UPDATE OR IGNORE", kind: badUnsupported, table: "accounts",
			run: badExec(`UPDATE OR IGNORE accounts SET balance = 0`)},
		{name: "REPLACE", kind: badUnsupported, table: "accounts",
			run: badExec(`REPLACE INTO accounts (id, balance) VALUES (1, 0)`)},
		{name: "writing CTE", kind: badUnsupported,
			run: badExec(`WITH x AS (SELECT 1 AS id) DELETE FROM accounts WHERE id IN (SELECT id FROM x)`)},
		{name: "multi-statement string", kind: badUnsupported,
			run: badExec(`UPDATE other SET v = 0; UPDATE accounts SET balance = 0`)},
		{name: "multi-statement string, guarded first", kind: badUnsupported,
			run: badExec(`DELETE FROM accounts; SELECT 1`)},
		{name: "numbered ?NNN placeholder", kind: badUnsupported, table: "accounts",
			run: badExec(`UPDATE accounts SET balance = ?1 WHERE id = ?2`, 0, 1)},
		{name: "named :id placeholder", kind: badUnsupported, table: "accounts",
			run: badExec(`DELETE FROM accounts WHERE id = :id`, sql.Named("id", 1))},
		{name: "DELETE … RETURNING outside a transaction", kind: badUnsupported, table: "accounts",
			run: badQuery(`DELETE FROM accounts WHERE id = ? RETURNING id`, 1)},
		{name: "unknown statement naming a guarded table", kind: badUnsupported,
			run: badExec(`UPSERT accounts SET balance = 0`)},
		{name: "string literal used as the table name", kind: badUnsupported,
			run: badExec(`INSERT INTO 'accounts' (id, balance) SELECT 2, 0`)},

		// ---- reserved columns assigned ----
		{name: "UPDATE sets fence_token in a row assignment", kind: badUnsupported, table: "accounts",
			run: badExec(`UPDATE accounts SET (v, fence_token) = (0, 999) WHERE id = 1`),
			check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "fence_token") {
					t.Errorf("error does not name the column: %v", err)
				}
			}},
		{name: "upsert sets version in a row assignment", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts (id, v) VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET (v, version) = (0, 0)`)},

		// ---- schema ----
		{name: "guarded table without the fencing columns", kind: badSchema, table: "bare", sqliteOnly: true,
			run: badExec(`UPDATE bare SET v = 0 WHERE id = ?`, 1),
			check: func(t *testing.T, err error) {
				var se *fencedsql.SchemaError
				errors.As(err, &se)
				if !strings.Contains(se.Problem, "fence_token") || !strings.Contains(se.Problem, "version") {
					t.Errorf("Problem %q does not name both columns", se.Problem)
				}
				for _, want := range []string{"ALTER TABLE bare ADD COLUMN", `"fence_token" BIGINT NOT NULL DEFAULT 0`, `"version" BIGINT NOT NULL DEFAULT 0`} {
					if !strings.Contains(se.Fix, want) {
						t.Errorf("Fix %q lacks %q", se.Fix, want)
					}
				}
			}},

		// ---- tokens ----
		{name: "no token", kind: badNoToken, table: "accounts",
			run: badExecCtx(bg, `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "token 0", kind: badNoToken, table: "accounts",
			run: badExecCtx(fencedsql.WithToken(bg, 0), `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "nil lease", kind: badNoToken, table: "accounts",
			run: badExecCtx(fencedsql.WithLease(bg, nil), `DELETE FROM accounts WHERE id = ?`, 1)},
		{name: "nil lease bound to a transaction", kind: badNoToken, table: "accounts", tx: true,
			run: badInTx(fencedsql.WithLease(bg, nil), `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 2, 0)},
		{name: "token > MaxInt64", kind: badNoToken, table: "accounts",
			run: badExecCtx(fencedsql.WithToken(bg, huge), `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "token MaxUint64", kind: badNoToken, table: "accounts",
			run: badExecCtx(fencedsql.WithToken(bg, math.MaxUint64), `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 2, 0)},
		// A token that does not fit a BIGINT must be refused inside a transaction too:
		// bound as int64 it would wrap to a negative number, and an INSERT would record it.
		{name: "token > MaxInt64 bound to a transaction, INSERT", kind: badNoToken, table: "accounts", tx: true,
			run: badInTxCommit(fencedsql.WithToken(bg, huge), `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 2, 0)},
		{name: "token > MaxInt64 bound to a transaction, UPDATE", kind: badNoToken, table: "accounts", tx: true,
			run: badInTx(fencedsql.WithToken(bg, huge), `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "lease token > MaxInt64 bound to a transaction", kind: badNoToken, table: "accounts", tx: true,
			run: badInTxCommit(fencedsql.WithLease(bg, badLease{math.MaxUint64}), `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 3, 0)},

		// ---- cancelled context ----
		{name: "cancelled context", kind: badCanceled,
			run: badExecCtx(canceled, `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "cancelled context, DELETE", kind: badCanceled,
			run: badExecCtx(canceled, `DELETE FROM accounts WHERE id = ?`, 1)},
		{name: "cancelled context, BeginTx", kind: badCanceled,
			run: badInTx(canceled, `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "cancelled context, prepared statement", kind: badCanceled,
			prepare: `UPDATE accounts SET balance = 0, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`,
			run: func(_ context.Context, db *sql.DB) error {
				st, err := db.PrepareContext(fencedsql.WithToken(bg, 9), `UPDATE accounts SET balance = 0 WHERE id = ?`)
				if err != nil {
					return err
				}
				defer st.Close()
				_, err = st.ExecContext(canceled, 1)
				return err
			}},

		// ---- arguments ----
		{name: "too few arguments", kind: badArgCount,
			run: badExec(`UPDATE accounts SET balance = ? WHERE id = ?`, 0)},
		{name: "too many arguments", kind: badArgCount,
			run: badExec(`UPDATE accounts SET balance = ? WHERE id = ?`, 0, 1, 2)},
		{name: "too few arguments, DELETE", kind: badArgCount,
			run: badExec(`DELETE FROM accounts WHERE id = ? OR id = ?`, 1)},
		{name: "too many arguments, INSERT", kind: badArgCount,
			run: badExec(`INSERT INTO accounts (id, balance) VALUES (?, ?)`, 2, 0, 0)},
		{name: "too few arguments, prepared", kind: badArgCount,
			prepare: `UPDATE accounts SET balance = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`,
			run:     badPrepared(`UPDATE accounts SET balance = ? WHERE id = ?`, 0)},
		{name: "named arguments on a guarded write", kind: badUnsupported, table: "accounts",
			run: badExec(`UPDATE accounts SET balance = ? WHERE id = ?`, sql.Named("b", 0), sql.Named("id", 1))},
		{name: "one named argument on a guarded write", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts (id, balance) VALUES (?, ?)`, 2, sql.Named("b", 0))},
		{name: "named arguments on a guarded DELETE", kind: badUnsupported, table: "accounts",
			run: badExec(`DELETE FROM accounts WHERE id = ?`, sql.Named("id", 1))},

		// ---- malformed: a DELETE that ends in WHERE (last: it panics the rewriter) ----
		{name: "DELETE ending in WHERE", kind: badUnsupported, table: "accounts",
			run: badExec(`DELETE FROM accounts WHERE`)},
		{name: "DELETE ending in WHERE and a comment", kind: badUnsupported, table: "accounts",
			run: badExec(`DELETE FROM accounts WHERE -- nothing`)},
	}
}

// badRun runs a case, turning a panic (which would crash the caller's process) into an
// error that fails the case.
func badRun(c badCase, ctx context.Context, db *sql.DB) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
		}
	}()
	return c.run(ctx, db)
}

// checkBad asserts that err is the error case c expects.
func checkBad(t *testing.T, c badCase, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v", c.kind)
	}
	ours := []error{fencedsql.ErrUnsupported, fencedsql.ErrSchema, fencedsql.ErrNoToken, fencedsql.ErrFenced, fencedsql.ErrVersionConflict, fencedsql.ErrDuplicate}
	switch c.kind {
	case badUnsupported:
		var ue *fencedsql.UnsupportedError
		if !errors.Is(err, fencedsql.ErrUnsupported) || !errors.As(err, &ue) {
			t.Fatalf("err = %v (%T); want *UnsupportedError (ErrUnsupported)", err, err)
		}
		if ue.Reason == "" {
			t.Errorf("UnsupportedError without a reason: %v", err)
		}
		if c.table != "" && ue.Table != c.table {
			t.Errorf("UnsupportedError.Table = %q, want %q", ue.Table, c.table)
		}
		if strings.Contains(err.Error(), "oops") {
			t.Errorf("the error quotes the statement's text: %v", err)
		}
	case badSchema:
		var se *fencedsql.SchemaError
		if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) {
			t.Fatalf("err = %v (%T); want *SchemaError (ErrSchema)", err, err)
		}
		if c.table != "" && se.Table != c.table {
			t.Errorf("SchemaError.Table = %q, want %q", se.Table, c.table)
		}
	case badNoToken:
		var ne *fencedsql.NoTokenError
		if !errors.Is(err, fencedsql.ErrNoToken) || !errors.As(err, &ne) {
			t.Fatalf("err = %v (%T); want *NoTokenError (ErrNoToken)", err, err)
		}
		if c.table != "" && ne.Table != c.table {
			t.Errorf("NoTokenError.Table = %q, want %q", ne.Table, c.table)
		}
	case badCanceled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v; want context.Canceled", err)
		}
	case badArgCount:
		if !strings.Contains(err.Error(), "argument") {
			t.Errorf("err = %v; want an error about the argument count", err)
		}
	}
	for _, s := range ours {
		if c.kind == badArgCount && errors.Is(err, s) {
			t.Errorf("argument count error %v must not be %v", err, s)
		}
	}
	if c.kind == badCanceled {
		for _, s := range ours {
			if errors.Is(err, s) {
				t.Errorf("cancellation error %v is also %v", err, s)
			}
		}
	}
	if c.check != nil {
		c.check(t, err)
	}
}

// newBadSQLite opens the embedded SQLite through "fenced-sqlite" with accounts, bare
// (no fencing columns) guarded, and one row in each real
// table.
func newBadSQLite(t *testing.T) *sql.DB {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "bad.db") + "?fenced_tables=accounts,bare"
	// The schema is made without the wrapper ("sqlite" is modernc's own driver name):
	// bare is guarded but cannot take a fenced write.
	raw, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, note TEXT,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE bare (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)`,
		`CREATE TABLE other (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)`,
		`INSERT INTO bare (id, v) VALUES (1, 10)`,
		`INSERT INTO other (id, v) VALUES (1, 20)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db, err := sql.Open(sqlite.DriverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), `INSERT INTO accounts (id, balance) VALUES (1, 100)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// badSnapshot returns every row of the SQLite tables.
func badSnapshot(t *testing.T, db *sql.DB) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT 'accounts', id, balance, coalesce(note, ''), fence_token, version FROM accounts ORDER BY id`,
		`SELECT 'bare', id, v, '', 0, 0 FROM bare ORDER BY id`,
		`SELECT 'other', id, v, '', 0, 0 FROM other ORDER BY id`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var table, note string
			var id, v, tok, ver int64
			if err := rows.Scan(&table, &id, &v, &note, &tok, &ver); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s id=%d v=%d note=%q fence_token=%d version=%d", table, id, v, note, tok, ver))
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestBadInputsSQLite(t *testing.T) {
	db := newBadSQLite(t)
	if before := badSnapshot(t, db); len(before) != 3 {
		t.Fatalf("setup: %v", before)
	}
	for _, c := range badCases() {
		t.Run(c.name, func(t *testing.T) {
			before := badSnapshot(t, db)
			err := badRun(c, fencedsql.WithToken(context.Background(), 9), db)
			if after := badSnapshot(t, db); !slices.Equal(before, after) {
				t.Errorf("the database changed:\n before %v\n after  %v", before, after)
			}
			checkBad(t, c, err)
		})
	}
}

var badMockSeq atomic.Int64

func TestBadInputsSqlmock(t *testing.T) {
	for _, c := range badCases() {
		if c.sqliteOnly {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			dsn := fmt.Sprintf("fencedsql-bad-%d", badMockSeq.Add(1))
			mdb, mock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
			if err != nil {
				t.Fatal(err)
			}
			defer mdb.Close()
			db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn),
				fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("accounts"), fencedsql.Guard("bare"),
				fencedsql.WithSchemaCheck(false))
			defer db.Close()
			db.SetMaxOpenConns(1)
			// A transaction may be begun and must then be rolled back; nothing else may
			// reach the driver.
			if c.tx {
				mock.ExpectBegin()
				mock.ExpectRollback()
			}
			if c.prepare != "" {
				mock.ExpectPrepare(c.prepare)
			}
			err = badRun(c, fencedsql.WithToken(context.Background(), 9), db)
			checkBad(t, c, err)
			if err != nil && strings.Contains(err.Error(), "was not expected") {
				t.Errorf("a statement reached the driver: %v", err)
			}
			if err := mock.ExpectationsWereMet(); err != nil {
				t.Error(err)
			}
		})
	}
}

// Configuration errors: an unknown fenced_* DSN parameter and guarded names that are
// not plain identifiers fail with *ConfigError — from sql.Open, or at the latest from
// the first use — and the message never contains the DSN's password.
func TestBadConfig(t *testing.T) {
	const secret = "s3cr3t-pw"
	dir := t.TempDir()
	file := "file:" + filepath.Join(dir, "c.db")
	dsns := []struct{ name, driver, dsn string }{
		{"pg url, unknown parameter", "fenced-pgx", "postgres://app:" + secret + "@127.0.0.1:1/shop?sslmode=disable&fenced_tabels=accounts"},
		{"pg key/value, unknown parameter", "fenced-pgx", "host=127.0.0.1 port=1 user=app password=" + secret + " fenced_bogus=1"},
		{"pg key/value, quoted password, unknown parameter", "fenced-pgx", "host=127.0.0.1 password='" + secret + " x' fenced_x=1"},
		{"mysql, unknown parameter", "fenced-mysql", "app:" + secret + "@tcp(127.0.0.1:1)/shop?fenced_tables=accounts&fenced_strikt=true"},
		{"sqlite, unknown parameter", "fenced-sqlite", file + "?fenced_tables=accounts&fenced_nope=1"},
		{"pg url, bad boolean", "fenced-pgx", "postgres://app:" + secret + "@127.0.0.1:1/shop?fenced_strict=maybe"},
		{"table name a;b", "fenced-sqlite", file + "?fenced_tables=a;b"},
		{"table name with a space", "fenced-pgx", "postgres://app:" + secret + "@127.0.0.1:1/shop?fenced_tables=a%20b"},
		{"table name with a quote", "fenced-mysql", "app:" + secret + "@tcp(127.0.0.1:1)/shop?fenced_tables=a%60b"},
		{"empty schema", "fenced-sqlite", file + "?fenced_tables=.accounts"},
		{"three-part name", "fenced-sqlite", file + "?fenced_tables=a.b.c"},
		{"bad token column", "fenced-pgx", "postgres://app:" + secret + "@127.0.0.1:1/shop?fenced_tables=a&fenced_token_column=x%22y"},
		{"token column equals version column", "fenced-sqlite", file + "?fenced_tables=a&fenced_token_column=version"},
	}
	for _, c := range dsns {
		t.Run(c.name, func(t *testing.T) {
			err := badOpenErr(t, c.driver, c.dsn)
			var ce *fencedsql.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *ConfigError", err, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error contains the DSN password: %v", err)
			}
		})
	}

	opts := []struct {
		name string
		opts []fencedsql.Option
	}{
		{`Guard("x y")`, []fencedsql.Option{fencedsql.Guard("x y")}},
		{`Guard("a;b")`, []fencedsql.Option{fencedsql.Guard("a;b")}},
		{`Guard("")`, []fencedsql.Option{fencedsql.Guard("")}},
		{`Guard("shop.")`, []fencedsql.Option{fencedsql.Guard("shop.")}},
		{`Guard("accounts\"")`, []fencedsql.Option{fencedsql.Guard(`accounts"`)}},
		{`TokenColumn("fence token")`, []fencedsql.Option{fencedsql.Guard("a", fencedsql.TokenColumn("fence token"))}},
		{`VersionColumn("")`, []fencedsql.Option{fencedsql.Guard("a", fencedsql.VersionColumn(""))}},
		{`TokenColumn = VersionColumn`, []fencedsql.Option{fencedsql.Guard("a", fencedsql.TokenColumn("v"), fencedsql.VersionColumn("V"))}},
		{`no dialect`, nil},
	}
	for _, c := range opts {
		t.Run(c.name, func(t *testing.T) {
			dsn := fmt.Sprintf("fencedsql-badcfg-%d", badMockSeq.Add(1))
			mdb, mock, err := sqlmock.NewWithDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer mdb.Close()
			all := c.opts
			if c.name != "no dialect" {
				all = append([]fencedsql.Option{fencedsql.WithDialect(sqlite.Dialect)}, c.opts...)
			}
			db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn), all...)
			defer db.Close()
			for _, use := range []func() error{
				db.Ping,
				func() error {
					_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 9), `SELECT 1`)
					return err
				},
			} {
				var ce *fencedsql.ConfigError
				if err := use(); !errors.As(err, &ce) {
					t.Errorf("err = %v (%T), want *ConfigError", err, err)
				}
			}
			if err := mock.ExpectationsWereMet(); err != nil {
				t.Error(err)
			}
		})
	}
}

// badOpenErr returns the error of sql.Open, or else of the first Ping.
func badOpenErr(t *testing.T, driverName, dsn string) error {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	return db.PingContext(ctx)
}

// A multi-statement string whose guarded write the server sees but a naive scan does
// not: inside a MySQL executable comment, or behind a PostgreSQL U&"…" identifier. The
// drivers run such strings (go-sql-driver/mysql with multiStatements=true; pgx runs an
// Exec without arguments over the simple protocol, which accepts several statements),
// so each must be refused, and nothing sent.
func TestBadInputsHiddenGuardedWrite(t *testing.T) {
	cases := []struct {
		d  dialect.Dialect
		in string
	}{
		{mysqldialect.Dialect, `SELECT 1; /*! UPDATE accounts SET balance = 0 */`},
		{mysqldialect.Dialect, `SELECT 1; /*!50000 DELETE FROM accounts */`},
		{mysqldialect.Dialect, `SELECT 1; /*M! INSERT INTO accounts (id) VALUES (1) */`},
		{postgres.Dialect, `SELECT 1; UPDATE U&"\0061ccounts" SET balance = 0`},
		{postgres.Dialect, `SELECT 1; DELETE FROM U&"accounts"`},
	}
	for _, c := range cases {
		t.Run(c.d.Name()+"/"+c.in, func(t *testing.T) {
			dsn := fmt.Sprintf("fencedsql-bad-%d", badMockSeq.Add(1))
			mdb, mock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
			if err != nil {
				t.Fatal(err)
			}
			defer mdb.Close()
			db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn),
				fencedsql.WithDialect(c.d), fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false))
			defer db.Close()
			_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 9), c.in)
			checkBad(t, badCase{kind: badUnsupported}, err)
			if err := mock.ExpectationsWereMet(); err != nil {
				t.Error(err)
			}
		})
	}
}

// Not bad inputs: valid statements whose clause keyword touches the token before it.
// The fenced text spliced in before the keyword must stay separated from it (today
// "… ELSE NULL END" + "WHERE" becomes "ENDWHERE", a syntax error on every database).
func TestGluedClauseKeywordsSQLite(t *testing.T) {
	db := newBadSQLite(t)
	ctx := fencedsql.WithToken(context.Background(), 9)
	for _, q := range []string{
		`UPDATE accounts SET balance=(balance+1)WHERE id=1`,
		`UPDATE accounts SET note='x'WHERE id=1`,
		`INSERT INTO accounts(id,balance)VALUES(1,0)ON CONFLICT(id)DO UPDATE SET balance=(7)WHERE id=1`,
		`DELETE FROM accounts WHERE id IN(2,3)RETURNING id`,
	} {
		var err error
		if strings.Contains(q, "RETURNING") {
			err = func() error {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				rows, err := tx.QueryContext(ctx, q)
				if err != nil {
					return err
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					return err
				}
				return tx.Commit()
			}()
		} else {
			_, err = db.ExecContext(ctx, q)
		}
		if err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}
