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
