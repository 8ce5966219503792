// Configuration mistakes (red-team rt51f): listings, search paths, startup options
// and pools that disagree; each must be refused with a typed error or be safe.

package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const cfgmCols = " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
const cfgmNullCols = " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT, version BIGINT)"

func cfgmRaw(t *testing.T, dsn string, setup ...string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, q := range setup {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return raw
}

func cfgmPool(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("fenced-pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// cfgmStale: a newer holder writes, then an older holder; the invariant: the older
// write is refused with a typed error and the row keeps the newer holder's value.
func cfgmStale(t *testing.T, db, raw *sql.DB, newer, older, check string) {
	t.Helper()
	ctx := context.Background()
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), newer)
	if err != nil {
		if cfgmTyped(err) {
			t.Logf("newer refused (typed): %v", err)
			return
		}
		t.Fatalf("newer: untyped error %v", err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), older)
	var b int64
	var tok sql.NullInt64
	if e := raw.QueryRow(check).Scan(&b, &tok); e != nil {
		t.Fatal(e)
	}
	if err == nil {
		t.Fatalf("stale write (token 5 after 10) accepted: balance=%d fence_token=%v\n newer: %s\n older: %s", b, tok, newer, older)
	}
	if !cfgmTyped(err) {
		t.Fatalf("stale write: untyped error %v", err)
	}
}

func cfgmTyped(err error) bool {
	var ce *fencedsql.ConfigError
	var se *fencedsql.SchemaError
	return errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrSchema) || errors.Is(err, fencedsql.ErrUnsupported) ||
		errors.Is(err, fencedsql.ErrNoToken) || errors.As(err, &ce) || errors.As(err, &se)
}

// A listed unqualified name guards a same-named table in another schema (by its last
// part); the other schema's table has nullable fencing columns.
func TestConfigMistakeQualifiedOtherSchemaNullable(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := cfgmRaw(t, dsn, "CREATE SCHEMA shop", "CREATE TABLE public.accounts"+cfgmCols,
		"CREATE TABLE shop.accounts"+cfgmNullCols, "INSERT INTO shop.accounts VALUES (1, 0, 0, 0)", "INSERT INTO public.accounts VALUES (1,0,0,0)")
	db := cfgmPool(t, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	cfgmStale(t, db, raw, "UPDATE shop.accounts SET balance = 10 WHERE id = 1", "UPDATE shop.accounts SET balance = 5 WHERE id = 1",
		"SELECT balance, fence_token FROM shop.accounts WHERE id = 1")
}

// search_path given via options=-csearch_path in the DSN vs fenced_tables unqualified.
func TestConfigMistakeOptionsSearchPath(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := cfgmRaw(t, dsn, "CREATE SCHEMA shop", "CREATE TABLE public.accounts"+cfgmCols,
		"CREATE TABLE shop.accounts"+cfgmNullCols, "INSERT INTO shop.accounts VALUES (1, 0, 0, 0)", "INSERT INTO public.accounts VALUES (1,0,0,0)")
	for i, p := range []string{"options=-csearch_path%3Dshop", "search_path=shop"} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			db := cfgmPool(t, fencetest.WithParam(dsn, "fenced_tables=public.accounts&"+p))
			cfgmStale(t, db, raw, "UPDATE accounts SET balance = 10 WHERE id = 1", "UPDATE accounts SET balance = 5 WHERE id = 1",
				"SELECT balance, fence_token FROM shop.accounts WHERE id = 1")
		})
	}
}

// SET search_path through the pool, then write unqualified after a qualified listing.
func TestConfigMistakeSetPathThroughPool(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := cfgmRaw(t, dsn, "CREATE SCHEMA shop", "CREATE TABLE public.accounts"+cfgmCols,
		"CREATE TABLE shop.accounts"+cfgmNullCols, "INSERT INTO shop.accounts VALUES (1, 0, 0, 0)", "INSERT INTO public.accounts VALUES (1,0,0,0)")
	sets := []string{"SET search_path = shop", "SELECT pg_catalog.set_config('search_path', 'shop', false)",
		"SET SESSION search_path TO shop, public", "SELECT set_config('search_path','shop',false)", "SET LOCAL search_path = shop"}
	for i, s := range sets {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			db := cfgmPool(t, fencetest.WithParam(dsn, "fenced_tables=accounts"))
			db.SetMaxOpenConns(1)
			ctx := context.Background()
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 1), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, s); err != nil {
				t.Logf("%s refused: %v", s, err)
				if !cfgmTyped(err) {
					t.Fatalf("untyped %v", err)
				}
				return
			}
			cfgmStale(t, db, raw, "UPDATE accounts SET balance = 10 WHERE id = 1", "UPDATE accounts SET balance = 5 WHERE id = 1",
				"SELECT balance, fence_token FROM shop.accounts WHERE id = 1")
		})
	}
}

// cfgmInstall runs schema.Check's Fix (guard, tombstone, registry) for table.
func cfgmInstall(t *testing.T, raw *sql.DB, table string) {
	t.Helper()
	ctx := context.Background()
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		for _, q := range r.Fix {
			if _, err := raw.ExecContext(ctx, q); err != nil {
				t.Fatalf("fix %q: %v", q, err)
			}
		}
	}
	if err := schema.RegisterTables(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: table}); err != nil {
		t.Fatal(err)
	}
}

// The guard installed for other columns (tok/ver) without registering; a second pool
// lists the table with the default columns, which the table also carries.
func TestConfigMistakeGuardColumnsVsPoolColumns(t *testing.T) {
	for _, register := range []bool{false, true} {
		t.Run(fmt.Sprint(register), func(t *testing.T) {
			dsn := testdb.Postgres(t)
			raw := cfgmRaw(t, dsn, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)",
				"INSERT INTO accounts VALUES (1,0,0,0,0,0)")
			ctx := context.Background()
			spec := schema.GuardSpec{Table: "accounts", TokenColumn: "tok", VersionColumn: "ver"}
			reps, err := schema.Check(ctx, raw, postgres.Dialect, spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				for _, q := range r.Fix {
					if _, err := raw.ExecContext(ctx, q); err != nil {
						t.Fatalf("fix %q: %v", q, err)
					}
				}
			}
			if register {
				if err := schema.RegisterTables(ctx, raw, postgres.Dialect, spec); err != nil {
					t.Fatal(err)
				}
			}
			a := cfgmPool(t, fencetest.WithParam(dsn, "fenced_tables=accounts&fenced_token_column=tok&fenced_version_column=ver"))
			b := cfgmPool(t, fencetest.WithParam(dsn, "fenced_tables=accounts"))
			if _, err := a.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 10 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			_, err = b.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 5 WHERE id = 1")
			var bal, tk int64
			raw.QueryRow("SELECT balance, tok FROM accounts WHERE id = 1").Scan(&bal, &tk)
			if err == nil || bal != 10 {
				t.Fatalf("stale write through the pool listing other columns: err=%v balance=%d tok=%d", err, bal, tk)
			}
			if !cfgmTyped(err) {
				t.Fatalf("refused with an untyped error: %#v %v", err, err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// A partition or an inheritance child listed instead of the table the application
// writes: a write through the root or parent reaches the listed table's rows.
func TestConfigMistakeDescendantListedWriteThroughAncestor(t *testing.T) {
	cases := map[string][]string{
		"partition": {"CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) PARTITION BY RANGE (id)",
			"CREATE TABLE accounts_p1 PARTITION OF accounts FOR VALUES FROM (0) TO (1000)"},
		"subpartition": {"CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) PARTITION BY RANGE (id)",
			"CREATE TABLE accounts_mid PARTITION OF accounts FOR VALUES FROM (0) TO (1000) PARTITION BY RANGE (id)",
			"CREATE TABLE accounts_p1 PARTITION OF accounts_mid FOR VALUES FROM (0) TO (1000)"},
		"inheritance": {"CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
			"CREATE TABLE accounts_p1 (PRIMARY KEY (id)) INHERITS (accounts)"},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			raw := cfgmRaw(t, dsn, append(setup, "INSERT INTO accounts_p1 (id, balance) VALUES (1, 0)")...)
			db := cfgmPool(t, fencetest.WithParam(dsn, "fenced_tables=accounts_p1"))
			cfgmStale(t, db, raw, "UPDATE accounts_p1 SET balance = 10 WHERE id = 1", "UPDATE accounts SET balance = 5 WHERE id = 1",
				"SELECT balance, fence_token FROM accounts_p1 WHERE id = 1")
			_, err := db.ExecContext(context.Background(), "DELETE FROM accounts WHERE id = 1")
			var n int
			raw.QueryRow("SELECT count(*) FROM accounts_p1").Scan(&n)
			if err == nil || n != 1 {
				t.Fatalf("DELETE through the ancestor without a token: err=%v rows left=%d", err, n)
			}
		})
	}
}

// Startup options given through the DSN (options=-c…), with the guard installed:
// a stale UPDATE and a stale re-insert of a deleted key must be refused.
func TestConfigMistakeStartupOptions(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := cfgmRaw(t, dsn, "CREATE TABLE accounts"+cfgmCols, "INSERT INTO accounts VALUES (1,0,0,0)")
	cfgmInstall(t, raw, "accounts")
	opts := []string{"transform_null_equals=on", "session_replication_role=replica", "session_replication_role=local",
		"default_transaction_isolation=serializable",
		"plan_cache_mode=force_generic_plan", "array_nulls=off", "lock_timeout=1", "constraint_exclusion=on",
		"jit=on", "jit_above_cost=0", "enable_seqscan=off", "enable_indexscan=off", "extra_float_digits=-15",
		"bytea_output=escape", "IntervalStyle=sql_standard", "DateStyle=SQL,DMY", "TimeZone=Pacific/Kiritimati",
		"default_transaction_deferrable=on", "cursor_tuple_fraction=0"}
	ctx := context.Background()
	for i, o := range opts {
		t.Run(o, func(t *testing.T) {
			id := 100 + i
			raw.Exec(fmt.Sprintf("INSERT INTO accounts (id, balance) VALUES (%d, 0)", id))
			db := cfgmPool(t, fencetest.WithParam(dsn, "fenced_tables=accounts&options=-c"+urlEsc(o)))
			cfgmStale(t, db, raw, fmt.Sprintf("UPDATE accounts SET balance = 10 WHERE id = %d", id), fmt.Sprintf("UPDATE accounts SET balance = 5 WHERE id = %d", id),
				fmt.Sprintf("SELECT balance, fence_token FROM accounts WHERE id = %d", id))
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), fmt.Sprintf("DELETE FROM accounts WHERE id = %d", id)); err != nil {
				t.Logf("delete refused: %v", err)
				return
			}
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 15), fmt.Sprintf("INSERT INTO accounts (id, balance) VALUES (%d, 15)", id))
			var n int
			raw.QueryRow(fmt.Sprintf("SELECT count(*) FROM accounts WHERE id = %d", id)).Scan(&n)
			if err == nil || n != 0 {
				t.Fatalf("re-insert under 15 after delete under 20: err=%v rows=%d", err, n)
			}
			if !cfgmTyped(err) {
				t.Fatalf("untyped %v", err)
			}
		})
	}
}

func urlEsc(s string) string { return url.QueryEscape(s) }

// Generator: spellings of the listed name over case twins ("Accounts" fit, accounts
// fit, shop."ACCOUNTS" nullable), times the statement's target spellings.
func TestConfigMistakeListedSpellingsCaseTwins(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := cfgmRaw(t, dsn, "CREATE SCHEMA shop", `CREATE TABLE "Accounts"`+cfgmCols, "CREATE TABLE accounts"+cfgmCols,
		`CREATE TABLE shop."ACCOUNTS"`+cfgmNullCols, `CREATE TABLE shop.accounts`+cfgmCols)
	// "ACCOUNTS" and "Accounts" over the twin "ACCOUNTS" are casetwin_listing_test.go's.
	listed := []string{"accounts", `"Accounts"`, `public."Accounts"`, `"public"."Accounts"`, "public.accounts",
		`accounts,"Accounts"`, `"Accounts",accounts`, `shop."ACCOUNTS"`, "shop.accounts", ` "Accounts" `, `"Accounts",`, `"ACCOUNTS"`}
	targets := []string{"accounts", `"Accounts"`, `public."Accounts"`, `shop."ACCOUNTS"`, "shop.accounts", "SHOP.ACCOUNTS", `"shop"."ACCOUNTS"`, "public.accounts"}
	ctx := context.Background()
	id := 0
	for _, l := range listed {
		db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables="+url.QueryEscape(l)))
		if err == nil {
			defer db.Close()
			err = db.PingContext(ctx)
		}
		if err != nil {
			t.Logf("listed %q: %.200v", l, err)
			if !cfgmTyped(err) {
				t.Errorf("listed %q: ping untyped %v", l, err)
			}
			continue
		}
		for _, tg := range targets {
			id++
			raw.Exec(fmt.Sprintf("INSERT INTO %s (id, balance, fence_token, version) VALUES (%d, 0, 10, 1)", tg, id))
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), fmt.Sprintf("UPDATE %s SET balance = 5 WHERE id = %d", tg, id))
			var b int64
			var tok sql.NullInt64
			raw.QueryRow(fmt.Sprintf("SELECT balance, fence_token FROM %s WHERE id = %d", tg, id)).Scan(&b, &tok)
			if err == nil && b == 5 {
				t.Errorf("listed %q target %s: stale write accepted (token %v)", l, tg, tok)
			} else if err != nil && !cfgmTyped(err) {
				t.Errorf("listed %q target %s: untyped %v", l, tg, err)
			}
		}
	}
}
