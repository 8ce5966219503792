package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"

	msqlite "modernc.org/sqlite"
)

// plainAccounts makes a file database holding accounts(id 1, fence_token 20) and
// returns its DSN (with a busy_timeout parameter) and a plain pool on it.
func plainAccounts(t *testing.T) (string, *sql.DB) {
	t.Helper()
	file := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", file,
		"CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 20, 1)")
	return file, raw
}

// requirePlainRefused fails t unless db's first use fails with a *ConfigError, and the
// row is unchanged.
func requirePlainRefused(t *testing.T, db, raw *sql.DB) {
	t.Helper()
	err := db.Ping()
	var ce *fencedsql.ConfigError
	if !errors.As(err, &ce) {
		_, werr := db.ExecContext(fencedsql.WithToken(context.Background(), 10), "UPDATE accounts SET balance = 0 WHERE id = 1")
		var bal int64
		if qerr := raw.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&bal); qerr != nil {
			t.Fatal(qerr)
		}
		t.Fatalf("ping: %v, want a *ConfigError (a stale write then: err %v, balance %d)", err, werr, bal)
	}
}

// fencedsql.OpenDB over a connector built by modernc's own API, whose DSN carries
// fenced_tables: the wrapper cannot read that DSN and modernc ignores the parameter,
// so the pool would guard nothing; the plain driver's connection hook refuses it
// (red-team rt31d F1).
func TestOpenDBOverPlainConnectorWithFencedParamsRefused(t *testing.T) {
	file, raw := plainAccounts(t)
	c, err := msqlite.NewConnector(file + "&fenced_tables=accounts")
	if err != nil {
		t.Fatal(err)
	}
	db := fencedsql.OpenDB(c, fencedsql.WithDialect(sqlite.Dialect))
	defer db.Close()
	requirePlainRefused(t, db, raw)
}

// sql.Open("sqlite", …) (modernc's own name, by mistake) with fenced_tables, or a
// misspelling of a parameter of this package, is refused (red-team rt31d F2): the
// servers PostgreSQL and MariaDB refuse an unknown parameter, modernc ignores one.
func TestPlainDriverNameWithFencedParamsRefused(t *testing.T) {
	file, raw := plainAccounts(t)
	for _, p := range []string{"fenced_tables=accounts", "fence_tables=accounts", "%66enced_tables=accounts", "fenced_strict=true"} {
		db, err := sql.Open("sqlite", file+"&"+p)
		if err != nil {
			t.Fatal(err)
		}
		requirePlainRefused(t, db, raw)
		db.Close()
	}
}

// The hook leaves alone a plain modernc pool without parameters of this package, and
// the fenced driver (its own modernc Driver, the parameters taken out), whose stale
// write fails with ErrFenced.
func TestPlainDriverHookLeavesOthersAlone(t *testing.T) {
	file, raw := plainAccounts(t)
	if _, err := raw.Exec("UPDATE accounts SET balance = 101 WHERE id = 1"); err != nil {
		t.Fatalf("plain pool without fenced parameters: %v", err)
	}
	c, err := msqlite.NewConnector(file)
	if err != nil {
		t.Fatal(err)
	}
	plain := sql.OpenDB(c)
	defer plain.Close()
	if err := plain.Ping(); err != nil {
		t.Fatalf("modernc's connector without fenced parameters: %v", err)
	}
	for _, db := range []*sql.DB{
		testdb.Open(t, sqlite.DriverName, file+"&fenced_tables=accounts"),
		fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, file+"&fenced_tables=accounts"), fencedsql.WithDialect(sqlite.Dialect)),
		fencedsql.OpenDB(fencedsql.DSNConnector(raw.Driver(), file+"&fenced_tables=accounts"), fencedsql.WithDialect(sqlite.Dialect)),
	} {
		_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 10), "UPDATE accounts SET balance = 0 WHERE id = 1")
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("fenced pool: stale write: %v, want ErrFenced", err)
		}
		db.Close()
	}
}
