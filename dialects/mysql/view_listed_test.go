package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A VIEW listed in fenced_tables (accounts_v over accounts: the name the application's
// model maps to) is refused at the first connection with ErrSchema naming the view and
// the table behind it, with no fix (red-team rt31d F4: MariaDB reports a view's columns
// NOT NULL, so the listing passed without a word and a stale write to accounts, which
// nothing guarded, went through).
func TestViewListedAsGuardedTableRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 100, 30, 1)",
		"CREATE VIEW accounts_v AS SELECT * FROM accounts")
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db, err := sql.Open("fenced-mysql", dsn+sep+"fenced_tables=accounts_v")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Ping()
	var se *fencedsql.SchemaError
	if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) {
		_, werr := db.ExecContext(fencedsql.WithToken(context.Background(), 10), "UPDATE accounts SET balance = 0 WHERE id = 1")
		var bal int64
		if qerr := raw.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&bal); qerr != nil {
			t.Fatal(qerr)
		}
		t.Fatalf("ping: %v, want ErrSchema (a stale write to accounts then: err %v, balance %d)", err, werr, bal)
	}
	if !strings.Contains(se.Problem, "accounts_v is a view") || !strings.Contains(se.Problem, "(accounts)") || se.Fix != "" {
		t.Fatalf("a guarded view is misreported:\nproblem: %s\nfix: %s", se.Problem, se.Fix)
	}
}
