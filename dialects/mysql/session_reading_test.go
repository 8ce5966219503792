package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Session settings changed through the fenced pool that make MariaDB read text
// otherwise than the wrapper's lexer: under latin1 the byte 0xA0 is whitespace to the
// server ("UPDATE accounts\xa0SET …" is an UPDATE of accounts) and one word with its
// neighbour to the lexer; NO_BACKSLASH_ESCAPES and ANSI_QUOTES change where strings
// end. Every statement judged by its text whose reading depends on them is refused
// until the setting is back; plain text still runs.
func TestSessionReadingMySQL(t *testing.T) {
	fencetest.RunSessionReading(t, fencetest.MySQL(), []fencetest.ReadingStep{
		{SQL: "SET NAMES latin1"},
		{SQL: "UPDATE accounts\xa0SET balance = 0 WHERE id = 1", Refused: "character_set_client"},
		{SQL: "SELECT balance FROM accounts WHERE id = 1"},
		{SQL: "SET NAMES utf8mb4"},
		{SQL: "SELECT balance FROM accounts WHERE 'é' <> 'b'"},
		{SQL: "SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"},
		{SQL: `SELECT balance FROM accounts WHERE 'a' <> 'b\\'`, Refused: "sql_mode"},
		{SQL: "SET sql_mode = REPLACE(@@sql_mode, 'NO_BACKSLASH_ESCAPES', '')"},
		{SQL: "SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')"},
		{SQL: `SELECT balance FROM accounts WHERE "a" <> 'b'`, Refused: "sql_mode"},
		{SQL: "SET sql_mode = REPLACE(@@sql_mode, 'ANSI_QUOTES', '')"},
		{SQL: `SELECT balance FROM accounts WHERE "a" <> 'b'`},
	})
}

// The same reading refused whatever else is wrong with the session (a non-strict
// sql_mode, which refuses writes only, must not hide it), after a change made in an
// executable comment, and on a connection whose DSN sets the character set (a new
// connection is checked before its first statement judged by its text).
func TestSessionReadingMySQLRoutes(t *testing.T) {
	update := "UPDATE accounts\xa0SET balance = 0 WHERE id = 1"
	fencetest.RunSessionReading(t, fencetest.MySQL(), []fencetest.ReadingStep{
		{SQL: "SET sql_mode = ''"},
		{SQL: "SET NAMES latin1"},
		{SQL: update, Refused: "character_set_client"},
		{SQL: "SET NAMES utf8mb4"},
		{SQL: "/*!40101SET character_set_client=latin1*/"},
		{SQL: update, Refused: "character_set_client"},
	})
	// A DSN charset of latin1 also sets character_set_results, under which the pool's
	// first connection would read its records otherwise: refused at connect (red-team
	// rt40b F4), naming the reading problem first.
	dsn := fencetest.WithParam(fencetest.WithParam(testdb.MySQL(t), "fenced_tables=accounts"), "charset=latin1")
	db, err := sql.Open(fencetest.MySQL().DriverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 7), update)
	var se *fencedsql.SessionError
	if !errors.As(err, &se) || se.Setting != "character_set_client" || !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("%q through a pool whose DSN sets charset=latin1: %v, want the session check's refusal", update, err)
	}
}
