package mysql_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// columnNamePairs are pairs of column names that one fold or another equates: ASCII
// case, Latin-1 and Greek case, the Kelvin and Ångström signs, the dotted capital I,
// the long s, final sigma, titlecase digraphs, ß.
var columnNamePairs = [][2]string{
	{"version", "VERSION"}, {"e", "é"}, {"é", "É"}, {"ss", "ß"}, {"ǅ", "ǆ"}, {"ǅ", "Ǆ"},
	{"i", "İ"}, {"i", "ı"}, {"σ", "ς"}, {"Σ", "ς"}, {"Σ", "σ"}, {"a", "Å"}, {"å", "Å"},
	{"ω", "Ω"}, {"k", "\u212a"}, {"s", "\u017f"}, {"version", "ver\u017fion"},
	{"fence_token", "fence_to\u212aen"}, {"å", "\u212b"},
}

// TestSameColumnNameAgreesWithServer asks the server itself whether two names are one
// column (CREATE TABLE with both fails with "Duplicate column name", 1060) and checks
// that dialect.SameColumnName — the answer the planner's fencing-column match uses too
// (sqllex.SameName) — gives the same verdict for every pair. Before, the planner folded
// with strings.EqualFold, which equates ſ with s and σ with ς where the server does not
// (red-team rt36a F8: a column verſion lost its assignment as the version column's).
func TestSameColumnNameAgreesWithServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw := testdb.Open(t, "mysql", testdb.MySQL(t))
	for i, p := range columnNamePairs {
		_, err := raw.ExecContext(ctx, "CREATE TABLE pair"+strconv.Itoa(i)+" (`"+p[0]+"` INT, `"+p[1]+"` INT)")
		server := err != nil && strings.Contains(err.Error(), "1060")
		if err != nil && !server {
			t.Fatalf("%q, %q: %v", p[0], p[1], err)
		}
		if got := dialect.SameColumnName(mysql.Dialect, p[0], p[1]); got != server {
			t.Errorf("SameColumnName(%q, %q) = %v; the server says one column: %v", p[0], p[1], got, server)
		}
	}
}

// TestColumnFoldTwinKeepsItsWrite: accounts has a column verſion (U+017F) besides its
// version column. The server keeps them apart, so a fenced UPDATE that sets verſion
// must write it (and stamp version itself); before, the planner took verſion for the
// version column and dropped its assignment (rt36a F8).
func TestColumnFoldTwinKeepsItsWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, `ver\u017fion` BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id) VALUES (1)")
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 7), "UPDATE accounts SET `ver\u017fion` = 42 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	var twin, tok, ver int64
	if err := raw.QueryRowContext(ctx, "SELECT `ver\u017fion`, fence_token, version FROM accounts WHERE id = 1").Scan(&twin, &tok, &ver); err != nil {
		t.Fatal(err)
	}
	if twin != 42 || tok != 7 || ver != 1 {
		t.Errorf("after UPDATE … SET verſion = 42 under token 7: verſion %d, fence_token %d, version %d; want 42, 7, 1", twin, tok, ver)
	}
	// The Kelvin-sign spelling is the server's token column: not written by the caller.
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 8), "UPDATE accounts SET `fence_to\u212aen` = 1000, balance = 1 WHERE id = 1")
	if err != nil && !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatal(err)
	}
	if err := raw.QueryRowContext(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&tok); err != nil {
		t.Fatal(err)
	}
	if tok == 1000 {
		t.Errorf("the caller's fence_toKen (Kelvin sign) = 1000 reached the token column")
	}
}
