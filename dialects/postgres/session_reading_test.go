package postgres_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// A session setting changed through the fenced pool that makes PostgreSQL read text
// otherwise than the wrapper's lexer: with standard_conforming_strings off, the
// lexer's string '\' is the server's escaped quote, and a data-modifying WITH it took
// for a string runs. Every statement judged by its text whose reading depends on the
// setting is refused until it is set back; plain text still runs.
func TestSessionReadingPostgres(t *testing.T) {
	hidden := `WITH a AS (SELECT '\'), x AS (SELECT '), d AS (DELETE FROM accounts WHERE id = 3 RETURNING 1) SELECT 1 --') SELECT 1`
	fencetest.RunSessionReading(t, fencetest.Postgres(), []fencetest.ReadingStep{
		{SQL: "SET standard_conforming_strings = off"},
		{SQL: hidden, Refused: "standard_conforming_strings"},
		{SQL: `SELECT balance FROM accounts WHERE id = 1 AND 'x' <> '\'`, Refused: "standard_conforming_strings"},
		// A locking read without a token is sent as written: the same hidden DELETE.
		{SQL: hidden[:len(hidden)-len("SELECT 1")] + "SELECT id FROM accounts WHERE id = 1 FOR UPDATE", Refused: "standard_conforming_strings"},
		{SQL: "SELECT balance FROM accounts WHERE id = 1"}, // no byte a session reads otherwise
		{SQL: "SET standard_conforming_strings = on"},
		{SQL: hidden}, // read as the lexer reads it: a string, nothing deleted
		{SQL: "SET client_encoding = 'SJIS'"},
		{SQL: `SELECT balance FROM accounts WHERE 'a' <> 'b\'`, Refused: "client_encoding"},
		{SQL: "SET client_encoding = 'UTF8'"},
		{SQL: `SELECT balance FROM accounts WHERE 'é' <> 'b\'`},
	})
}
