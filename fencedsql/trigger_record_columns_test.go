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
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A table guarded by its triggers alone (no registry row: fencedsql-schema -print
// applied by hand, schema.Check + Fix, a registry lost) is guarded on the columns its
// guard trigger checks, read by the records query of the first connection, whatever
// the schema check says (red-team rt55c F1): without a listing a stale write is
// refused ErrFenced (fenced on tok, as the guard is) and the current token's lands; a
// listing with other columns (the defaults), or a registry row recording other
// columns, fails the pool with ErrSchema. Before, the table was taken on the default
// columns and, with the check off, the stale write fenced on fence_token landed.
func TestTriggerOnlyGuardColumnsChecksOff(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ name, listing string }{{"unlisted", ""}, {"listed", "&fenced_tables=accounts"}, {"registered-defaults", ""}} {
		t.Run(c.name, func(t *testing.T) {
			listing := c.listing
			path := cfggenTriggerOnly(t)
			want := fencedsql.ErrFenced
			if c.name == "registered-defaults" {
				// Two records of the table that disagree: a registry row on the defaults,
				// the triggers on tok.
				raw := testdb.Open(t, "sqlite", "file:"+path)
				if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts", TokenColumn: "fence_token", VersionColumn: "version"}); err != nil {
					t.Fatal(err)
				}
				raw.Close()
				want = fencedsql.ErrSchema
			} else if listing != "" {
				want = fencedsql.ErrSchema
			}
			for _, check := range []string{"false", "true"} {
				before := cfggenRow(t, path, 2)
				db := testdb.Open(t, "fenced-sqlite", "file:"+path+"?fenced_schema_check="+check+listing)
				db.SetMaxOpenConns(1)
				_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = -1 WHERE id = 2`)
				if after := cfggenRow(t, path, 2); !errors.Is(err, want) || after != before {
					t.Fatalf("check %s: stale write (token 5; guard triggers on tok/version, row at tok 10): %v, want %v\n  before %s\n  after  %s", check, err, want, before, after)
				}
				if want == fencedsql.ErrFenced {
					if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `UPDATE accounts SET balance = 20 WHERE id = 2`); err != nil {
						t.Fatalf("check %s: the current token's write refused: %v", check, err)
					}
				}
			}
		})
	}
}

// The same on PostgreSQL and MariaDB: the guard's columns are read from the guard
// function's source (pg_proc.prosrc) and the guard trigger's body
// (information_schema.TRIGGERS.ACTION_STATEMENT).
func TestTriggerOnlyGuardColumnsChecksOffServers(t *testing.T) {
	type srv struct {
		name, plain, fenced string
		dsn                 func(testing.TB) string
		d                   dialect.Dialect
	}
	for _, s := range []srv{
		{"postgres", "pgx", "fenced-pgx", testdb.Postgres, postgres.Dialect},
		{"mariadb", "mysql", "fenced-mysql", testdb.MySQL, mysqld.Dialect},
	} {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := s.dsn(t)
			raw := testdb.Open(t, s.plain, dsn,
				`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0,
					fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
					tok BIGINT NOT NULL DEFAULT 0)`,
				`INSERT INTO accounts (id, balance) VALUES (1, 0)`)
			installTriggersOnly(t, raw, s.d, schema.GuardSpec{Table: "accounts", TokenColumn: "tok", VersionColumn: "version"})
			good := testdb.Open(t, s.fenced, dsn+"&fenced_tables=accounts&fenced_token_column=tok")
			if _, err := good.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = 100 WHERE id = 1`); err != nil {
				t.Fatalf("newer holder: %v", err)
			}
			for _, c := range []struct {
				listing string
				want    error
			}{{"", fencedsql.ErrFenced}, {"&fenced_tables=accounts", fencedsql.ErrSchema}} {
				db := testdb.Open(t, s.fenced, dsn+"&fenced_schema_check=false"+c.listing)
				_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = -1 WHERE id = 1`)
				var b, ft, v, tk int64
				_ = raw.QueryRow(`SELECT balance, fence_token, version, tok FROM accounts WHERE id = 1`).Scan(&b, &ft, &v, &tk)
				if !errors.Is(err, c.want) || b != 100 {
					t.Errorf("listing %q: stale write (token 5) after token 10 (guard triggers on tok/version), schema check off: %v, want %v; row balance=%d fence_token=%d version=%d tok=%d", c.listing, err, c.want, b, ft, v, tk)
				}
			}
		})
	}
}

// fencedpgx (pgx's native API) reads the records as the database/sql wrapper does.
func TestTriggerOnlyGuardColumnsFencedpgx(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, tok BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, tok, version) VALUES (1, 100, 10, 1)`)
	installTriggersOnly(t, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts", TokenColumn: "tok", VersionColumn: "version"})
	pp, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pp.Close()
	p, err := fencedpgx.New(pp, fencedsql.WithSchemaCheck(false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Exec(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = -1 WHERE id = 1`)
	var b, ft, v, tk int64
	_ = raw.QueryRow(`SELECT balance, fence_token, version, tok FROM accounts WHERE id = 1`).Scan(&b, &ft, &v, &tk)
	if !errors.Is(err, fencedsql.ErrFenced) || b != 100 {
		t.Fatalf("fencedpgx, schema check off: stale write (token 5; tok 10; guard triggers on tok/version, no registry): %v, want ErrFenced; row balance=%d fence_token=%d version=%d tok=%d", err, b, ft, v, tk)
	}
	if _, err := p.Exec(fencedsql.WithToken(ctx, 20), `UPDATE accounts SET balance = 20 WHERE id = 1`); err != nil {
		t.Fatalf("the current token's write refused: %v", err)
	}
}

// The trigger record of s2.accounts (guard on the default columns) is not hidden by a
// registry row naming public.accounts (on tok): records are matched by schema and
// name, so s2.accounts is guarded on its guard's columns. Before, it took
// public.accounts' columns: with the schema check off a stale write fenced on tok and
// landed; with it on every write to s2.accounts, the current token's included, was
// refused ErrSchema.
func TestTriggerRecordOtherSchemaRegistryNotShadowed(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, `CREATE SCHEMA s2`)
	for _, tb := range []string{"public.accounts", "s2.accounts"} {
		testdb.Exec(t, raw, `CREATE TABLE `+tb+` (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, tok BIGINT NOT NULL DEFAULT 0)`,
			`INSERT INTO `+tb+` (id, balance, fence_token, version) VALUES (1, 100, 10, 1)`)
	}
	if err := schema.RegisterTables(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "public.accounts", TokenColumn: "tok", VersionColumn: "version"}); err != nil {
		t.Fatal(err)
	}
	installTriggersOnly(t, raw, postgres.Dialect, schema.GuardSpec{Table: "s2.accounts"})
	for i, check := range []string{"false", "true"} {
		db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_schema_check="+check)
		_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE s2.accounts SET balance = -1 WHERE id = 1`)
		var b, ft, v, tk int64
		_ = raw.QueryRow(`SELECT balance, fence_token, version, tok FROM s2.accounts WHERE id = 1`).Scan(&b, &ft, &v, &tk)
		if !errors.Is(err, fencedsql.ErrFenced) || b == -1 {
			t.Fatalf("check %s: stale write (token 5) to s2.accounts (guard triggers on fence_token/version, fence_token 10 or above): %v, want ErrFenced; row balance=%d fence_token=%d version=%d tok=%d", check, err, b, ft, v, tk)
		}
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, uint64(20+20*i)), `UPDATE s2.accounts SET balance = 20 WHERE id = 1`); err != nil {
			t.Fatalf("check %s: the current token's write to s2.accounts refused: %v", check, err)
		}
		if _, err := db.ExecContext(ctx, `UPDATE public.accounts SET balance = -1 WHERE id = 1`); !errors.Is(err, fencedsql.ErrNoToken) {
			t.Fatalf("check %s: a write without a token to public.accounts (registered): %v, want ErrNoToken", check, err)
		}
	}
}

// installTriggersOnly applies schema.Check's Fix for spec but the registry's
// statements: the guard's triggers without a registry row.
func installTriggersOnly(t *testing.T, raw *sql.DB, d dialect.Dialect, spec schema.GuardSpec) {
	t.Helper()
	ctx := context.Background()
	reps, err := schema.Check(schema.WithoutTombstones(ctx), raw, d, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		for _, q := range r.Fix {
			if strings.Contains(strings.ToLower(q), "fencedsql_registry") {
				continue
			}
			if _, err := raw.ExecContext(ctx, q); err != nil {
				t.Fatalf("fix %q: %v", q, err)
			}
		}
	}
}

// GuardColumns reads back the columns each stock dialect's guard text was written
// for, odd names included (quotes inside, another case); a text without the guard's
// NULL tests names none.
func TestGuardColumnsReadFromGuardText(t *testing.T) {
	for _, d := range []dialect.Dialect{sqlite.Dialect, postgres.Dialect, mysqld.Dialect} {
		f := d.(dialect.GuardFinder)
		for _, cols := range [][2]string{{"fence_token", "version"}, {"tok", "ver"}, {`T"o` + "`k", "Row Version"}} {
			ddl := strings.Join(d.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, cols[0], cols[1]), ";\n")
			tok, ver, ok := f.GuardColumns(ddl)
			if !ok || tok != cols[0] || ver != cols[1] {
				t.Errorf("%s: GuardColumns(guard of %q, %q) = %q, %q, %v", d.Name(), cols[0], cols[1], tok, ver, ok)
			}
		}
		if tok, ver, ok := f.GuardColumns("CREATE TRIGGER x BEFORE UPDATE ON t BEGIN SELECT 1; END"); ok {
			t.Errorf("%s: GuardColumns of another text = %q, %q, true", d.Name(), tok, ver)
		}
	}
}
