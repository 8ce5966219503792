package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A fencing column that is not an integer, or too narrow (dialect.NarrowFencingColumn), is refused by the lazy check (ErrSchema,
// nothing written) and reported by schema.Check with its fix: real rounds a token
// above 2^24, so without the check a stale token 16777216 overwrites a row written
// under 16777217.
func TestLintFencingColumnTypes(t *testing.T) {
	for name, ddl := range map[string]string{
		"real token":      "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token real NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"numeric version": "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version numeric NOT NULL DEFAULT 0)",
		// Too narrow: every redislock token (microseconds since the epoch) fails an
		// integer column with pgx's out-of-range error, not ErrSchema.
		"integer token":    "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token integer NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"smallint version": "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version smallint NOT NULL DEFAULT 0)",
	} {
		t.Run(name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx := context.Background()
			raw, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			for _, q := range []string{ddl, "INSERT INTO acc (id, fence_token) VALUES (1, 16777217)"} {
				if _, err := raw.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			open := func() *sql.DB {
				db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=acc")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			_, err = open().ExecContext(fencedsql.WithToken(ctx, 16777216), "UPDATE acc SET balance = 1 WHERE id = $1", 1)
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("write on the unfit table: %v, want ErrSchema", err)
			}
			var bal int64
			if err := raw.QueryRowContext(ctx, "SELECT balance FROM acc WHERE id = 1").Scan(&bal); err != nil || bal != 0 {
				t.Fatalf("balance %d, %v: the refused write changed the row", bal, err)
			}
			reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
			if err != nil || len(reps[0].Problems) == 0 {
				t.Fatalf("schema.Check: %+v, %v; want the column's problem", reps, err)
			}
			for _, q := range reps[0].Fix {
				if _, err := raw.ExecContext(ctx, q); err != nil {
					t.Fatalf("fix %q: %v", q, err)
				}
			}
			_, err = open().ExecContext(fencedsql.WithToken(ctx, 16777218), "UPDATE acc SET balance = 2 WHERE id = $1", 1)
			if err != nil {
				t.Fatalf("write after the fix: %v", err)
			}
		})
	}
}

// A DEFERRABLE primary key on a table with the tombstones: the stale INSERT of a key
// whose DELETE is in progress did not wait for it, and the row came back (a red-team
// pass). The lazy check refuses the table (ErrSchema, nothing written) and
// schema.Check gives the fix; after it, writes pass.
func TestLintDeferrablePrimaryKey(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY DEFERRABLE INITIALLY DEFERRED, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	apply := func() []string {
		t.Helper()
		reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
		if err != nil {
			t.Fatal(err)
		}
		var problems []string
		for _, r := range reps {
			problems = append(problems, r.Problems...)
			for _, q := range r.Fix {
				if _, err := raw.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		}
		return problems
	}
	apply() // the guard and the tombstones
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=acc")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO acc (id) VALUES (1)")
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("INSERT into a table with a DEFERRABLE primary key and tombstones: err = %v, want ErrSchema", err)
	}
	found := false
	for _, p := range apply() {
		found = found || strings.Contains(p, "DEFERRABLE")
	}
	if !found {
		t.Fatal("schema.Check did not report the DEFERRABLE primary key")
	}
	if left := apply(); len(left) != 0 {
		t.Fatalf("after the fix: %q", left)
	}
	fresh, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=acc")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO acc (id) VALUES (1)"); err != nil {
		t.Fatalf("after the fix: %v", err)
	}
}

// A fencing column configured in another case than PostgreSQL stored it: the wrapper
// quotes the configured name, so "Fence_Token" is another column than fence_token.
// The column check compares names exactly here: the write is refused with ErrSchema
// (it failed with the server's untyped "column does not exist"); and of two columns
// that differ only in case, the one configured is the one judged (a nullable
// "Fence_Token" next to a NOT NULL fence_token stored the fencing NULL).
func TestColumnNamesExact(t *testing.T) {
	for name, c := range map[string]struct{ ddl, col string }{
		"other case":     {"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)", "Fence_Token"},
		"case twin null": {`CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, "Fence_Token" bigint, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`, "Fence_Token"},
	} {
		t.Run(name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx := context.Background()
			raw := rawWith(t, dsn, c.ddl, "INSERT INTO acc (id) VALUES (1)")
			db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=acc&fenced_token_column="+c.col)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE acc SET balance = 1 WHERE id = $1", 1)
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("write with token column %q: %v, want ErrSchema", c.col, err)
			}
			var bal int64
			if err := raw.QueryRowContext(ctx, "SELECT balance FROM acc WHERE id = 1").Scan(&bal); err != nil || bal != 0 {
				t.Fatalf("balance %d, %v: the refused write changed the row", bal, err)
			}
		})
	}
}
