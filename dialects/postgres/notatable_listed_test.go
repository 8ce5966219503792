package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestForeignTableListedRefused (red-team rt33a F4): a foreign table (postgres_fdw)
// listed in fenced_tables is accepted — Ping passes, no guard trigger is installed —
// although its rows live in the remote table, as a view's live in the table it reads
// (views are refused for that reason since rt31d F5). The columns' NOT NULL the
// schema check reads on the foreign table is declared only: PostgreSQL does not
// enforce constraints on foreign tables. With the remote fencing column nullable, a
// write with token 3 after token 5 wrote the row was not refused: it changed the
// balance and left fence_token NULL. A foreign table listed is now refused at the
// first connection with a *SchemaError naming it a foreign table (guard the remote
// table on its own server), as a view is.
func TestForeignTableListedRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	u, _ := url.Parse(dsn)
	pw, _ := u.User.Password()
	admin := testdb.Open(t, "pgx", dsn,
		"CREATE TABLE rt33a_remote_accounts (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT DEFAULT 0, version BIGINT DEFAULT 0)",
		"INSERT INTO rt33a_remote_accounts (id, balance) VALUES (1, 1)",
		"CREATE EXTENSION IF NOT EXISTS postgres_fdw",
		"CREATE SERVER rt33a_loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '"+u.Hostname()+"', port '"+u.Port()+"', dbname '"+strings.TrimPrefix(u.Path, "/")+"')",
		"CREATE USER MAPPING FOR CURRENT_USER SERVER rt33a_loop OPTIONS (user '"+u.User.Username()+"', password '"+pw+"')",
		"CREATE FOREIGN TABLE accounts (id INT NOT NULL, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) SERVER rt33a_loop OPTIONS (table_name 'rt33a_remote_accounts')",
	)
	t.Cleanup(func() { _, _ = admin.Exec("DROP SERVER rt33a_loop CASCADE") })
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=accounts")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var se *fencedsql.SchemaError
	if err := db.Ping(); errors.As(err, &se) {
		if !strings.Contains(se.Problem, "is a foreign table, not a table") || se.Fix != "" {
			t.Fatalf("a listed foreign table is misreported:\nproblem: %s\nfix: %s", se.Problem, se.Fix)
		}
		return // refused as it should be
	}
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatalf("write with token 5: %v", err)
	}
	_, staleErr := db.ExecContext(fencedsql.WithToken(context.Background(), 3), "UPDATE accounts SET balance = 3 WHERE id = 1")
	var bal int64
	var tok sql.NullInt64
	if err := admin.QueryRow("SELECT balance, fence_token FROM rt33a_remote_accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("a foreign table listed in fenced_tables was accepted as guarded; stale token-3 write after token 5: err=%v, remote row balance=%d fence_token=%v (want the foreign table refused with ErrSchema, or at least the stale write refused with ErrFenced)", staleErr, bal, tok)
}

// TestSequenceListedReportedAsSequence (red-team rt33a F7): a PostgreSQL sequence listed in
// fenced_tables passes Ping (a view or materialized view is refused there), and the
// first write reports it as a table missing its fencing columns with the fix "ALTER
// TABLE t ADD COLUMN …", which cannot run on a sequence. Right behaviour: refused at
// the first connection with a *SchemaError saying t is a sequence, not a table, with
// no ALTER TABLE fix (as checkListed does for views).
func TestSequenceListedReportedAsSequence(t *testing.T) {
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn, "CREATE SEQUENCE t")
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=t")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Ping()
	if err == nil {
		_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 5), "UPDATE t SET balance = 2 WHERE id = 1")
	}
	var se *fencedsql.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("want a *SchemaError, got %T %v", err, err)
	}
	if !strings.Contains(se.Problem, "is a sequence, not a table") || se.Fix != "" {
		t.Fatalf("a listed sequence is misreported as a table:\nproblem: %s\nfix: %s", se.Problem, se.Fix)
	}
}
