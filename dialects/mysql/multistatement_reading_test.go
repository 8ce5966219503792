package mysql_test

import (
	"context"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Multi-statement texts (multiStatements=true) whose first statement changes how the
// server reads the rest (red-team rt37e F1): MariaDB parses and runs the statements
// one at a time, the planner read the whole text once. Each text is now refused with
// ErrUnsupported before anything is sent (plan: multistatement.go), and row 1, written
// under token 60, keeps balance 5.

// multiHiddenWrite sends q through a fenced pool with multiStatements=true (and the
// extra DSN parameters) under token 8, with args; guarded installs the guard first.
// It fails unless q is refused with ErrUnsupported and row 1 is unchanged.
func multiHiddenWrite(t *testing.T, guarded bool, extra, q string, args ...any) {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, accountsDDL,
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1)")
	if guarded {
		fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	}
	db := testdb.Open(t, "fenced-mysql", dsn+"&multiStatements=true"+extra+"&fenced_tables=accounts")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 8), q, args...)
	var b int64
	if qerr := raw.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&b); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrUnsupported) || b != 5 {
		t.Errorf("%q: %v, row 1 balance %d; want ErrUnsupported and balance 5 (a token-8 write hidden from the planner)", q, err, b)
	}
}

func hiddenUpdate(set string) string {
	return hex.EncodeToString([]byte("UPDATE accounts SET " + set + " WHERE id = 1"))
}

// TestMultiStatementSQLModeChangeRefused: SET sql_mode = '…NO_BACKSLASH_ESCAPES', then
// `SELECT 'a\'; PREPARE p FROM 0x…; EXECUTE p; -- '`, one string literal to a reader
// with backslash escapes, a SELECT and a dynamic UPDATE to the server.
func TestMultiStatementSQLModeChangeRefused(t *testing.T) {
	multiHiddenWrite(t, false, "", "SET sql_mode = 'STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES'; SELECT 'a\\'; PREPARE p FROM 0x"+hiddenUpdate("balance = 1")+"; EXECUTE p; -- '")
}

// TestMultiStatementSetNamesRefused: SET NAMES sjis, where 0x95 0x5C is one character
// and the quote after it closes the string.
func TestMultiStatementSetNamesRefused(t *testing.T) {
	multiHiddenWrite(t, false, "", "SET NAMES sjis; SELECT '\x95\\'; PREPARE p FROM 0x"+hiddenUpdate("balance = 1")+"; EXECUTE p; -- '")
}

// TestMultiStatementArgumentNotCode: with interpolateParams=true go-sql-driver escaped
// the argument with backslashes for the session it last heard from; the server, under
// NO_BACKSLASH_ESCAPES by then, ended the string at the escaped quote and ran the
// argument's UPDATE.
func TestMultiStatementArgumentNotCode(t *testing.T) {
	multiHiddenWrite(t, false, "&interpolateParams=true", "SET sql_mode = 'STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES'; SELECT ?",
		"x'; UPDATE accounts SET balance = 1 WHERE id = 1; -- ")
}

// TestMultiStatementHiddenWriteWithGuard: the hidden UPDATE keeps the token and
// advances the version, which the MariaDB guard trigger lets through; the text is
// refused before it reaches the guard.
func TestMultiStatementHiddenWriteWithGuard(t *testing.T) {
	multiHiddenWrite(t, true, "", "SET sql_mode = 'STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES'; SELECT 'a\\'; PREPARE p FROM 0x"+hiddenUpdate("balance = 1, version = version + 1")+"; EXECUTE p; -- '")
}

// sjisHiddenTail follows a SET NAMES sjis: to a reader in sjis, 0x95 0x5C is one
// character and the quote after it ends the string, so a dynamic UPDATE of accounts
// runs.
func sjisHiddenTail() string {
	return "; SELECT '\x95\\'; PREPARE p FROM 0x" + hiddenUpdate("balance = 1") + "; EXECUTE p; -- '"
}

// TestMultiStatementIdentifierNamedLikeBlockWord (red-team rt38a F1, F2): BEGIN is a
// non-reserved word (a column alias), and a reserved word after a qualifier dot is a
// column (`a.case`); counted as blocks, they hid the SET NAMES after them. The text is
// now cut at every ';' outside parentheses.
func TestMultiStatementIdentifierNamedLikeBlockWord(t *testing.T) {
	multiHiddenWrite(t, false, "", "SELECT 1 AS begin, 2; SET NAMES sjis"+sjisHiddenTail())
	multiHiddenWrite(t, true, "", "SELECT 1 AS begin, 2; SET NAMES sjis; SELECT '\x95\\'; PREPARE p FROM 0x"+hiddenUpdate("balance = 1, version = version + 1")+"; EXECUTE p; -- '")
	multiHiddenWrite(t, false, "&interpolateParams=true", "SELECT 1 AS begin, 2; SET sql_mode = 'STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES'; SELECT ?",
		"x'; UPDATE accounts SET balance = 1 WHERE id = 1; -- ")
	multiHiddenWrite(t, false, "", "SELECT a.case FROM (SELECT 1 AS `case`) a; SET NAMES sjis"+sjisHiddenTail())
}

// TestMultiStatementCharSetSpelling (red-team rt38a F3): CHAR is CHARACTER's synonym in
// MariaDB's grammar; SET CHAR SET sjis was taken for an ordinary setting.
func TestMultiStatementCharSetSpelling(t *testing.T) {
	for _, head := range []string{"SET CHAR SET sjis", "SET @x = 1, CHAR SET sjis"} {
		multiHiddenWrite(t, false, "", head+sjisHiddenTail())
	}
}

// TestMultiStatementSafeSettingsRun (red-team rt38a F5, over-refusal): migration and
// dump headers that set a character set or sql_mode reading as the wrapper reads
// (utf8mb4; NO_AUTO_VALUE_ON_ZERO) run before the statements after them.
func TestMultiStatementSafeSettingsRun(t *testing.T) {
	ctx := fencedsql.WithToken(context.Background(), 8)
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn, accountsDDL)
	db := testdb.Open(t, "fenced-mysql", dsn+"&multiStatements=true&fenced_tables=accounts")
	for i, q := range []string{
		"SET NAMES utf8mb4; SET FOREIGN_KEY_CHECKS = 0; CREATE TABLE m1 (id INT PRIMARY KEY, name VARCHAR(20)); INSERT INTO m1 VALUES (1, 'a'); SET FOREIGN_KEY_CHECKS = 1;",
		"SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO'; CREATE TABLE m2 (id INT PRIMARY KEY AUTO_INCREMENT); INSERT INTO m2 VALUES (0)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Errorf("migration %d %q: %v; want it run", i, q, err)
		}
	}
}

// TestMultiStatementCaseExpressionInCompound (red-team rt39b F1): inside a compound
// statement, `CASE WHEN 1 THEN begin …` (a column named begin) was counted as a block,
// so the count closed only at a later END the wrapper read after a string the server
// reads otherwise, and the SET after the compound was taken for part of it. A CASE
// not at a statement's place is now an expression whose THEN opens no block.
func TestMultiStatementCaseExpressionInCompound(t *testing.T) {
	const compound = "BEGIN NOT ATOMIC SELECT CASE WHEN 1 THEN begin ELSE 0 END FROM (SELECT 1 AS begin) t; END; "
	multiHiddenWrite(t, false, "&fenced_allow=dynamic_sql",
		compound+"SET NAMES sjis; SELECT '\x95\\'; UPDATE accounts SET balance = 1 WHERE id = 1; -- '; END")
	multiHiddenWrite(t, true, "&fenced_allow=dynamic_sql",
		compound+"SET sql_mode = 'NO_BACKSLASH_ESCAPES'; SELECT 'a\\'; UPDATE accounts SET balance = 1, version = version + 1 WHERE id = 1; -- '; END")
	multiHiddenWrite(t, false, "&interpolateParams=true&fenced_allow=dynamic_sql",
		compound+"SET sql_mode = 'NO_BACKSLASH_ESCAPES'; SELECT ?; END",
		"x'; UPDATE accounts SET balance = 1 WHERE id = 1; -- ")
}
