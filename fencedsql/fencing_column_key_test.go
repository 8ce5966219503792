package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	mysqld "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestFencingColumnInUniqueKeyRefused (red-team rt59d F1, fail-open): a fencing
// column that is a column of one of the table's unique keys — fenced_token_column=id
// with id the primary key, or the version column in a unique index or a composite
// key — was accepted by the pool and by schema.Check. Every fenced write sets the
// fencing columns, so a newer holder's UPDATE of row 1 moved the row to key 20, and
// the stale holder's UPDATE of row 1 then found no row (no error: "not found", not
// ErrFenced) and its INSERT of key 1 landed. Now, on every dialect, for every such
// key: the pool refuses the table before anything is written (ErrSchema, the row
// unchanged) and schema.Check reports the problem, before and after its Fix.
func TestFencingColumnInUniqueKeyRefused(t *testing.T) {
	backends := []struct {
		name, driver, raw string
		dsn               func(testing.TB) string
		d                 dialect.Dialect
	}{
		{"sqlite", "fenced-sqlite", "sqlite", testdb.SQLite, sqlite.Dialect},
		{"postgres", "fenced-pgx", "pgx", testdb.Postgres, postgres.Dialect},
		{"mariadb", "fenced-mysql", "mysql", testdb.MySQL, mysqld.Dialect},
	}
	keys := []struct {
		name string
		ddl  string // the table, keyed
		tok  string // the fencing columns the pool and Check are given
		ver  string
	}{
		{"token is the primary key", "CREATE TABLE accounts (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)", "id", "version"},
		{"version is the primary key", "CREATE TABLE accounts (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)", "fence_token", "id"},
		{"token in a composite primary key", "CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id, fence_token))", "fence_token", "version"},
		{"version in a unique index", "CREATE TABLE accounts (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, UNIQUE (balance, version))", "fence_token", "version"},
	}
	for _, b := range backends {
		for _, k := range keys {
			t.Run(b.name+"/"+k.name, func(t *testing.T) {
				ctx := context.Background()
				dsn := b.dsn(t)
				raw := testdb.Open(t, b.raw, dsn, k.ddl, "INSERT INTO accounts (id, balance) VALUES (1, 100)")
				spec := schema.GuardSpec{Table: "accounts", TokenColumn: k.tok, VersionColumn: k.ver}
				keyProblem := func(when string) {
					t.Helper()
					reps, err := schema.Check(schema.WithoutTombstones(ctx), raw, b.d, spec)
					if err != nil {
						t.Fatalf("schema.Check %s: %v", when, err)
					}
					for _, r := range reps {
						for _, p := range r.Problems {
							if strings.Contains(p, "unique key") {
								return
							}
						}
					}
					t.Errorf("schema.Check %s does not report the fencing column in a unique key: %+v", when, reps)
				}
				keyProblem("before its Fix")
				reps, _ := schema.Check(schema.WithoutTombstones(ctx), raw, b.d, spec)
				for _, r := range reps {
					for _, f := range r.Fix {
						raw.ExecContext(ctx, f) //nolint:errcheck // a Fix that the key stops may fail: the point is Check after it
					}
				}
				keyProblem("after its Fix")
				sep := "?"
				if strings.Contains(dsn, "?") {
					sep = "&"
				}
				db, err := sql.Open(b.driver, dsn+sep+"fenced_tables=accounts&fenced_token_column="+k.tok+"&fenced_version_column="+k.ver)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				_, err = db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 200 WHERE id = 1")
				if !errors.Is(err, fencedsql.ErrSchema) {
					t.Errorf("a fenced UPDATE with the fencing column %s in a unique key: %v; want ErrSchema", k.name, err)
				}
				var bal int64
				if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil || bal != 100 {
					t.Errorf("row 1 after the refused UPDATE: balance %d, %v; want 100, unchanged", bal, err)
				}
			})
		}
	}
}
