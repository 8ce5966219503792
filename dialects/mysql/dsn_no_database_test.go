package mysql_test

// Red-team rt24b: configuration of guarded tables (docs/design.md G13).

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// RT24B F7. A go-sql-driver DSN may leave the database out (user:pw@tcp(h)/?params)
// and name every table database-qualified. The pool then has no current database, so
// no registry of guarded tables to read (MySQL's registry is the connection
// database's): the tables one records would go unguarded without a word. Reading it
// answers 1046 (No database selected), which the dialect reports
// (dialect.NoDatabaseReporter), and the pool refuses every statement with a
// ConfigError that says to name the database in the DSN — not the ErrSchema "grant the
// application SELECT on it" it gave before — never quoting the DSN's password; nothing
// is written.
func TestNoDefaultDatabaseRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO accounts VALUES (1, 0, 5, 1)")
	slash := strings.LastIndexByte(dsn, '/')
	name, params, _ := strings.Cut(dsn[slash+1:], "?")
	noDB := dsn[:slash+1] + "?" + params
	db, err := sql.Open("fenced-mysql", noDB+"&fenced_tables="+name+".accounts")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE "+name+".accounts SET balance = 5 WHERE id = 1")
	var ce *fencedsql.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "name the database") {
		t.Errorf("fenced UPDATE %s.accounts (token 10) on a pool whose DSN names no database: %v; want a ConfigError asking for the database in the DSN", name, err)
	}
	if at := strings.IndexByte(dsn, '@'); at > 0 && strings.Contains(err.Error(), dsn[:at+1]) {
		t.Errorf("the error quotes the DSN's credentials: %v", err)
	}
	var b int
	if err := raw.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&b); err != nil {
		t.Fatal(err)
	}
	if b != 0 {
		t.Errorf("balance now %d; want 0 (nothing written)", b)
	}
}
