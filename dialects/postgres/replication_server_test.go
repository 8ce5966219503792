package postgres_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func pgExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	}
}

// schema.Check on the test server (no standby): the replication report is notes only,
// and it reads the role-in-database defaults of the current database.
func TestReplicationOnServer(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // after the role's cleanup
	var dbName string
	if err := db.QueryRow("SELECT current_database()").Scan(&dbName); err != nil {
		t.Fatal(err)
	}
	role := throwawayRole(t, db)
	q := postgres.Dialect.QuoteIdent
	pgExec(t, db, "ALTER ROLE "+q(role)+" IN DATABASE "+q(dbName)+" SET synchronous_commit = off")

	reps, err := schema.Check(ctx, db, postgres.Dialect, schema.GuardSpec{Table: "nosuch"})
	if err != nil {
		t.Fatal(err)
	}
	r := reps[0].Replication
	if !r.Checked || r.Replicas != 0 || !r.OK() || len(r.Findings) == 0 || !strings.Contains(r.Findings[0].Problem, "no replica") {
		t.Fatalf("replication = %+v", r)
	}
	found := false
	for _, f := range r.Findings {
		if strings.Contains(f.Setting, "role "+role+" in database "+dbName) {
			found = f.Note && f.Value == "off" && strings.Join(f.Fix, "") == "ALTER ROLE "+q(role)+" IN DATABASE "+q(dbName)+" RESET synchronous_commit"
		}
	}
	if !found {
		t.Errorf("the role's default in this database is not reported as a note with its fix: %+v", r.Findings)
	}
	for _, p := range reps[0].Problems {
		if strings.HasPrefix(p, "replication:") {
			t.Errorf("a replication problem on a single server: %q", p)
		}
	}
}

// throwawayRole creates a login role (dropped at cleanup) that owns nothing, with the
// fixed test password "fsql-test".
func throwawayRole(t *testing.T, db *sql.DB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	role := "fsql_sync_" + hex.EncodeToString(b)
	q := postgres.Dialect.QuoteIdent
	pgExec(t, db, "CREATE ROLE "+q(role)+" LOGIN PASSWORD 'fsql-test'")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP OWNED BY "+q(role)); err != nil {
			t.Errorf("drop owned: %v", err)
		}
		if _, err := db.ExecContext(ctx, "DROP ROLE "+q(role)); err != nil {
			t.Errorf("drop role: %v", err)
		}
	})
	return role
}

// A role whose default is synchronous_commit = local (ALTER ROLE … SET: it arrives as
// the session's value) fails its first guarded write with a *SessionError naming the
// setting; nothing is written. Reset, a new connection writes. Once a connection has
// been checked, its guarded writes send no query for it (pgx: read once, kept in the
// connection), so a change made on Raw afterwards is not seen (the documented limit).
func TestSessionSynchronousCommitRoleDefault(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() }) // after the role's cleanup
	role := throwawayRole(t, admin)
	q := postgres.Dialect.QuoteIdent
	pgExec(t, admin,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO accounts VALUES (1, 100, 5, 0)",
		"GRANT SELECT, INSERT, UPDATE, DELETE ON accounts TO "+q(role),
		"ALTER ROLE "+q(role)+" SET synchronous_commit = local")

	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "fsql-test")
	open := func() *sql.DB {
		db := testdb.Open(t, "fenced-pgx", u.String()+"&fenced_tables=accounts")
		return db
	}
	write := func(db *sql.DB, tok uint64, balance int) error {
		_, err := db.ExecContext(fencedsql.WithToken(ctx, tok), "UPDATE accounts SET balance = $1 WHERE id = 1", balance)
		return err
	}
	balance := func() (b int) {
		if err := admin.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}

	db := open()
	err = write(db, 7, 999)
	var se *fencedsql.SessionError
	if !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) || se.Setting != "synchronous_commit" || se.Value != "local" ||
		!strings.Contains(se.Fix, "RESET synchronous_commit") {
		t.Fatalf("write under ALTER ROLE … SET synchronous_commit = local: %v, want a *SessionError naming synchronous_commit", err)
	}
	if b := balance(); b != 100 {
		t.Fatalf("balance = %d after a refused write", b)
	}

	pgExec(t, admin, "ALTER ROLE "+q(role)+" RESET synchronous_commit")
	db = open()
	db.SetMaxOpenConns(1)
	if err := write(db, 7, 999); err != nil {
		t.Fatalf("after RESET, on a new connection: %v", err)
	}
	if b := balance(); b != 999 {
		t.Fatalf("balance = %d", b)
	}
	// Read once per connection, and again after the caller had the raw connection: a
	// change made there after the first write is seen (a red-team pass: it was not).
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		raw := dc.(interface{ Raw() driver.Conn }).Raw()
		_, err := raw.(driver.ExecerContext).ExecContext(ctx, "SET synchronous_commit = local", nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err = func() error {
		_, err := c.ExecContext(fencedsql.WithToken(ctx, 8), "UPDATE accounts SET balance = $1 WHERE id = 1", 1000)
		return err
	}()
	if !errors.As(err, &se) || se.Setting != "synchronous_commit" {
		t.Fatalf("a write after SET synchronous_commit = local on Raw: %v, want a *SessionError", err)
	}
	if b := balance(); b != 999 {
		t.Fatalf("balance = %d after the refused write", b)
	}
}
