// A parameter of this package written inside another parameter's value or after '#'
// (red-team rt43b F1), on real databases: refused, never a pool that guards nothing.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// misplacedStaleWriteVerdict runs the stale-write scenario on db: a holder with token 10 writes row 1
// of table, then a holder with token 5 writes it. It returns "" when the pool held
// (refused at first use with ErrSchema/ConfigError, or the stale write refused with
// ErrFenced), and what went wrong otherwise.
func misplacedStaleWriteVerdict(db *sql.DB, table string) string {
	ctx := context.Background()
	typedRefusal := func(err error) bool {
		return errors.Is(err, fencedsql.ErrSchema) || errors.As(err, new(*fencedsql.ConfigError))
	}
	if err := db.PingContext(ctx); err != nil {
		if typedRefusal(err) {
			return ""
		}
		return "first use failed with an untyped error: " + err.Error()
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE "+table+" SET balance = 100 WHERE id = 1"); err != nil {
		if typedRefusal(err) {
			return ""
		}
		return "the newer holder's write failed with an untyped error: " + err.Error()
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE "+table+" SET balance = 5 WHERE id = 1")
	switch {
	case errors.Is(err, fencedsql.ErrFenced):
		return ""
	case err == nil:
		return "a stale write (token 5 after 10) landed: the pool guards nothing, and Open/first use said nothing"
	default:
		return "the stale write failed with another error than ErrFenced: " + err.Error()
	}
}

func misplacedSQLiteFile(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "fencedsql-misplaced") // t.TempDir's name would carry the subtest's DSN characters
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	path := filepath.Join(d, "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path)
	for _, s := range []string{
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 0)`,
		`CREATE TABLE orders (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
	} {
		if _, err := raw.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// A parameter of this package written inside another part of the DSN than a
// parameter key — after a '#' (a URI fragment, which SQLite ignores), glued to the
// previous parameter's value by a mistyped separator (',' or a percent-encoded '&'),
// as the value of a key-less '=', or as a _pragma value — was found neither by
// splitDSN nor by paramOfOurs, which judged keys only; modernc ignores it, so
// sql.Open("fenced-sqlite", …) opened a pool that guards nothing (only the "nothing
// guarded" Warn was logged) and a stale write landed. G13: a misspelled parameter is
// an error at Open, never a silently unguarded table: now a *ConfigError
// (paramOfOurs, dsn_misplaced.go).
func TestMisplacedParamRefusedSQLite(t *testing.T) {
	cases := []struct{ name, dsn string }{
		{"fragment after file name", "file:%s#fenced_tables=accounts"},
		{"fragment after query", "file:%s?mode=rwc#fenced_tables=accounts"},
		{"fragment after plain path query", "%s?mode=rwc#fenced_tables=accounts"},
		{"comma instead of ampersand", "%s?mode=rwc,fenced_tables=accounts"},
		{"percent-encoded ampersand", "%s?mode=rwc%%26fenced_tables%%3Daccounts"},
		{"key-less equals", "file:%s?=fenced_tables=accounts"},
		{"as a pragma", "file:%s?_pragma=fenced_tables=accounts"},
		// Another table listed properly: the pool guards orders, so not even the
		// "guards no table" Warn is logged, and accounts is silently unguarded.
		{"second list glued by a comma, another table guarded", "%s?fenced_tables=orders&mode=rwc,fenced_tables=accounts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := misplacedSQLiteFile(t)
			dsn := strings.Replace(c.dsn, "%s", path, 1)
			dsn = strings.ReplaceAll(dsn, "%%", "%")
			db, err := sql.Open("fenced-sqlite", dsn)
			if err != nil {
				if !errors.As(err, new(*fencedsql.ConfigError)) {
					t.Fatalf("Open(%q) failed with an untyped error: %v", dsn, err)
				}
				return
			}
			defer db.Close()
			if r := misplacedStaleWriteVerdict(db, "accounts"); r != "" {
				t.Errorf("DSN %q: %s", dsn, r)
			}
		})
	}
}

func misplacedPGPort(url string) string {
	_, rest, _ := strings.Cut(url, "@")
	hostport, _, _ := strings.Cut(rest, "/")
	_, port, _ := strings.Cut(hostport, ":")
	return port
}

func misplacedServerExec(t *testing.T, drv, dsn string, stmts ...string) {
	t.Helper()
	raw, err := sql.Open(drv, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// The same on MariaDB: go-sql-driver/mysql reads charset=a,b as "a, or b if a fails", and
// takes a collation value it then ignores; a fenced_tables glued to either by a ',' or a
// percent-encoded '&' reaches the driver and the pool guards nothing.
func TestMisplacedParamRefusedMySQL(t *testing.T) {
	base := os.Getenv("FENCEDSQL_MYSQL_DSN")
	if base == "" {
		t.Skip("FENCEDSQL_MYSQL_DSN not set")
	}
	misplacedServerExec(t, "mysql", base, "DROP DATABASE IF EXISTS misplaced_f1", "CREATE DATABASE misplaced_f1",
		"CREATE TABLE misplaced_f1.accounts (id INT PRIMARY KEY, balance INT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO misplaced_f1.accounts (id) VALUES (1)")
	t.Cleanup(func() { misplacedServerExec(t, "mysql", base, "DROP DATABASE IF EXISTS misplaced_f1") })
	b := strings.Replace(base, "/?", "/misplaced_f1?", 1)
	for _, dsn := range []string{
		b + "&charset=utf8mb4,fenced_tables=accounts",
		b + "&collation=utf8mb4_general_ci%26fenced_tables%3Daccounts",
	} {
		t.Run("", func(t *testing.T) {
			misplacedServerExec(t, "mysql", b, "UPDATE accounts SET fence_token = 0, version = 0, balance = 0")
			db, err := sql.Open("fenced-mysql", dsn)
			if err != nil {
				if !errors.As(err, new(*fencedsql.ConfigError)) {
					t.Fatalf("Open(%q) failed with an untyped error: %v", dsn, err)
				}
				return
			}
			defer db.Close()
			if r := misplacedStaleWriteVerdict(db, "accounts"); r != "" {
				t.Errorf("DSN %q: %s", dsn, r)
			}
		})
	}
}

// The same on PostgreSQL: a percent-encoded '&' glues fenced_tables into application_name's
// value (the URL form), or a quoted keyword/value value holds it; pgx sends it to the
// server as the application name and the pool guards nothing.
func TestMisplacedParamRefusedPG(t *testing.T) {
	base := os.Getenv("FENCEDSQL_PG_DSN")
	if base == "" {
		t.Skip("FENCEDSQL_PG_DSN not set")
	}
	misplacedServerExec(t, "pgx", base, "DROP TABLE IF EXISTS misplaced_f1_accounts",
		"CREATE TABLE misplaced_f1_accounts (id INT PRIMARY KEY, balance INT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO misplaced_f1_accounts (id) VALUES (1)")
	t.Cleanup(func() { misplacedServerExec(t, "pgx", base, "DROP TABLE IF EXISTS misplaced_f1_accounts") })
	for _, dsn := range []string{
		base + "&application_name=app%26fenced_tables%3Dmisplaced_f1_accounts",
		"host=127.0.0.1 port=" + misplacedPGPort(base) + " user=fenced password=fenced dbname=postgres sslmode=disable application_name=app,fenced_tables=misplaced_f1_accounts",
	} {
		t.Run("", func(t *testing.T) {
			misplacedServerExec(t, "pgx", base, "UPDATE misplaced_f1_accounts SET fence_token = 0, version = 0, balance = 0")
			db, err := sql.Open("fenced-pgx", dsn)
			if err != nil {
				if !errors.As(err, new(*fencedsql.ConfigError)) {
					t.Fatalf("Open(%q) failed with an untyped error: %v", dsn, err)
				}
				return
			}
			defer db.Close()
			if r := misplacedStaleWriteVerdict(db, "misplaced_f1_accounts"); r != "" {
				t.Errorf("DSN %q: %s", dsn, r)
			}
		})
	}
}
