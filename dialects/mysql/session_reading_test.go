package mysql_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/fencetest"
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
	fencetest.RunSessionReading(t, fencetest.MySQL(), []fencetest.ReadingStep{
		{SQL: update, Refused: "character_set_client"},
	}, "charset=latin1")
}
