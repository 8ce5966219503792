package mysql_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// floorAccounts is the token floor tests' set-up: a new database holding accounts
// (balance 5) with rows ids written under token 5 (version 1) and its guard installed
// (the floor's table and triggers with it). It returns the database's DSN and a pool
// of the plain driver.
func floorAccounts(t *testing.T, ids ...int) (string, *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	rows := make([]string, len(ids))
	for i, id := range ids {
		rows[i] = fmt.Sprintf("(%d, 5, 1)", id)
	}
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES "+strings.Join(rows, ", "))
	testdb.Exec(t, raw, mysql.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	return dsn, raw
}
