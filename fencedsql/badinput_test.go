package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/sqlite" // registers "fenced-sqlite"
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
	badArgCount                   // database/sql's own argument count error (a prepared statement), none of ours
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
	file := "file:" + filepath.Join(t.TempDir(), "bad.db")
	dsn := file + "?fenced_tables=accounts,bare"
	// The schema is made without the wrapper ("sqlite" is modernc's own driver name,
	// which refuses a DSN holding fenced_tables): bare is guarded but cannot take a
	// fenced write.
	raw, err := sql.Open("sqlite", file)
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
