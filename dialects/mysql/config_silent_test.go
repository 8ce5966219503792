package mysql_test

// Configuration mistakes that left a guarded table unguarded, or a check off, without
// a word (red-team rt34d; docs/design.md G13), on MariaDB. See also
// fencedsql/config_silent_test.go (SQLite) and dialects/postgres/listed_tables_test.go.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const accountsDDL = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`

// staleWrite sends an UPDATE of row 1 under token 5 (the row holds 10) through db and
// returns the error and the row's balance and token afterwards, read through raw.
func staleWrite(t *testing.T, db, raw *sql.DB) (error, int64, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 99 WHERE id = 1")
	var b, tok int64
	if qerr := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&b, &tok); qerr != nil {
		t.Fatal(qerr)
	}
	return err, b, tok
}

// TestListedTableCheckedWithSchemaCheckOff (fail-open). fenced_tables=acounts (a
// typo) fails the first use with ErrSchema ("no such table"); add
// fenced_schema_check=false and the existence of the listed tables is never asked:
// the pool opens without a word and a stale write (token 5 over 10) to accounts lands.
//
// Right behaviour: the listed tables' existence is asserted whatever the schema check
// (a real "no such table" fails the pool; a mock's failing query may be logged): the
// write is refused with ErrSchema, the row keeps balance 1.
func TestListedTableCheckedWithSchemaCheckOff(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, accountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acounts&fenced_schema_check=false")
	err, b, _ := staleWrite(t, db, raw)
	if err == nil || b != 1 || !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("fenced_tables=acounts (typo) + fenced_schema_check=false: stale write returned %v, balance now %d; want ErrSchema naming acounts, balance 1", err, b)
	}
}

// TestListedTableMissingWithDDLRefusesWrites (fail-open). With fenced_allow=ddl a missing
// listed table is only logged, and a pool opened by sql.Open logs to nowhere: a typo
// (fenced_tables=acounts) leaves accounts unguarded without a word in the minimal
// set-up, and a stale write lands.
//
// Right behaviour: until every listed table exists the pool refuses its writes other
// than DDL (checking again at each) with ErrSchema naming the missing table.
func TestListedTableMissingWithDDLRefusesWrites(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, accountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acounts&fenced_allow=ddl")
	err, b, _ := staleWrite(t, db, raw)
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "acounts") || b != 1 {
		t.Errorf("fenced_tables=acounts (typo) + fenced_allow=ddl: stale write returned %v, balance now %d; want it refused (ErrSchema naming acounts), balance 1", err, b)
	}
}

// TestSchemaCheckOffLogged (fail-open, silently). A DSN carrying
// fenced_schema_check=false (copied from a test set-up) and a non-strict sql_mode
// (here the DSN's; a server default does the same): the stale write (token 5 over 10)
// succeeds and stores the refused token as 0 — the row's token goes back from 10 to 0,
// so every older holder can write it next. This consequence is documented at
// WithSchemaCheck ("never run a pool with the check off against a real database
// without the guard"), but nothing tells the operator that a pool runs so: the pool,
// given a logger, logs nothing at open, at its first connection, or at the write
// (whose warning MariaDB raised and the wrapper did not look at).
//
// Right behaviour: the pool says at its first connection (Warn, naming
// fenced_schema_check / WithSchemaCheck) that it runs with the checks off — better,
// the session check, which reads a real database's answer, still refuses the
// non-strict sql_mode (ErrSchema) — and the row keeps balance 1 and token 10.
func TestSchemaCheckOffLogged(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, accountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&gomysql.MySQLDriver{}, dsn+"&fenced_tables=accounts&fenced_schema_check=false&sql_mode=''"),
		fencedsql.WithDialect(mysqldialect.Dialect), fencedsql.WithLogger(l))
	t.Cleanup(func() { db.Close() })
	err, b, tok := staleWrite(t, db, raw)
	logged := strings.Contains(buf.String(), "level=WARN") && strings.Contains(buf.String(), "fenced_schema_check=false")
	if err == nil && !logged {
		t.Errorf("pool with fenced_schema_check=false and sql_mode='': stale write succeeded (balance %d, token %d, was 1 and 10) and the pool logged %q; want the write refused (ErrSchema: non-strict sql_mode), or at least a Warn naming the check that is off", b, tok, buf.String())
	}
}

// TestSchemaCheckOffReadingModesChecked (fail-open). On PostgreSQL the
// settings that change how a statement lexes (standard_conforming_strings,
// client_encoding) are checked before every guarded write even with the schema check
// off (WithSchemaCheck's doc). On MariaDB the equivalent settings — sql_mode's
// ANSI_QUOTES and NO_BACKSLASH_ESCAPES, character_set_client — are checked only with
// it on: with fenced_schema_check=false and a DSN whose sql_mode is strict but has
// ANSI_QUOTES (an application that writes "…" identifiers), UPDATE "accounts" … is a
// write to a string to the wrapper's lexer, so it is not a guarded write at all: a
// stale one (token 5 over 10) and one without any token both land and keep the row's
// token at 10 (not even the non-strict zeroing the docs warn about; ErrNoToken is not
// enforced). The pool logs nothing.
//
// Right behaviour: the lexer-affecting session settings are checked whatever the
// schema check says, as on PostgreSQL (a *SessionError, errors.Is ErrSchema, before
// the statement is sent): both writes refused, the row keeps balance 1.
func TestSchemaCheckOffReadingModesChecked(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, accountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_schema_check=false&sql_mode=%27STRICT_TRANS_TABLES,ANSI_QUOTES%27")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"stale token 5", fencedsql.WithToken(ctx, 5)}, {"no token", ctx}} {
		_, err := db.ExecContext(c.ctx, `UPDATE "accounts" SET balance = 99 WHERE id = 1`)
		var b, tok int64
		if qerr := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&b, &tok); qerr != nil {
			t.Fatal(qerr)
		}
		if err == nil || b != 1 {
			t.Errorf(`fenced_schema_check=false, sql_mode STRICT_TRANS_TABLES,ANSI_QUOTES: UPDATE "accounts" (%s) returned %v, row now balance %d token %d; want a SessionError (ANSI_QUOTES) and balance 1`, c.name, err, b, tok)
		}
		testdb.Exec(t, raw, "UPDATE accounts SET balance = 1, fence_token = 10 WHERE id = 1")
	}
}
