package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTombstoneKeyColumnNamedLikeFunctionVariable: the tombstone function (PL/pgSQL)
// names the key's columns bare in its ON CONFLICT targets, where PL/pgSQL resolves a
// name against its variables too. A key column named like one of them (mark, marked,
// seen, newer: red-team rt37a F2) failed every DELETE and INSERT with the raw 42702
// "column reference is ambiguous" while schema.Check reported the table fit; the
// function now declares its variables under the reserved prefix and resolves a shared
// name to the column (#variable_conflict use_column), whatever the session's
// plpgsql.variable_conflict. The newest holder's fenced DELETE succeeds and a stale
// re-insert fails with ErrFenced, through the wrapper and on a plain connection under
// either session setting.
func TestTombstoneKeyColumnNamedLikeFunctionVariable(t *testing.T) {
	for _, col := range []string{"mark", "seen", "newer", "marked", "found", "tg_op", "new"} {
		t.Run(col, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			dsn := testdb.Postgres(t)
			raw := guardedWith(t, ctx, dsn, "CREATE TABLE accounts ("+col+" BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
				"INSERT INTO accounts ("+col+", balance, fence_token, version) VALUES (1, 5, 60, 1), (2, 5, 60, 1)")
			if reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].OK() || !reps[0].Tombstoned {
				t.Fatalf("schema.Check after the Fix: %+v %v", reps, err)
			}
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			for _, k := range []string{"1", "2"} {
				if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE "+col+" = "+k); err != nil {
					t.Fatalf("fenced DELETE of key %s under the newest token (70) of a key column named %q: %v", k, col, err)
				}
			}
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO accounts ("+col+", balance) VALUES (1, 9)")
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale INSERT through the wrapper: %v", err)
			}
			// A plain connection, under each session setting of variable_conflict: the
			// tombstone refuses (23502), it does not fail otherwise.
			for _, setting := range []string{"error", "use_variable", "use_column"} {
				conn, err := raw.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := conn.ExecContext(ctx, "SET plpgsql.variable_conflict = "+setting); err != nil {
					t.Fatal(err)
				}
				_, err = conn.ExecContext(ctx, "INSERT INTO accounts ("+col+", balance, fence_token, version) VALUES (2, 9, 65, 1)")
				conn.Close()
				if err == nil || !strings.Contains(err.Error(), "23502") {
					t.Fatalf("stale plain INSERT under plpgsql.variable_conflict = %s: %v (want the tombstone's 23502)", setting, err)
				}
			}
		})
	}
}

// TestTombstoneEarlierVersionReinstalled: a tombstone function of the version before
// the variable fix (its marker) is reported as not installed, and the Fix replaces it.
func TestTombstoneEarlierVersionReinstalled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := guardedWith(t, ctx, dsn, "CREATE TABLE accounts (mark BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	var src string
	if err := raw.QueryRowContext(ctx, "SELECT prosrc FROM pg_proc WHERE proname = 'fencedsql_tombstone_accounts'").Scan(&src); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(src, "fencedsql tombstone guard v12") || !strings.HasPrefix(strings.TrimSpace(src), "#variable_conflict use_column") {
		t.Fatalf("installed tombstone function:\n%s", src)
	}
	testdb.Exec(t, raw, "CREATE OR REPLACE FUNCTION public.fencedsql_tombstone_accounts() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$"+
		strings.Replace(src, "fencedsql tombstone guard v12", "fencedsql tombstone guard v7", 1)+"$f$")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil || reps[0].Tombstoned || len(reps[0].Fix) == 0 {
		t.Fatalf("schema.Check over the earlier version: %+v %v", reps, err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].Tombstoned {
		t.Fatalf("schema.Check after its Fix: %+v %v", reps, err)
	}
}

// TestTombstoneKeyColumnNamedLikeTombstoneColumn: the tombstone table holds the key's
// columns under their own names beside fence_token and deleted_at; a key column of
// either name (red-team rt37a F3) made schema.Check's Fix fail with the raw 42701
// "column specified more than once", so neither guard of it installed. schema.Check
// now reports the key as one no tombstone guard can be installed for (a problem
// without a tombstone Fix: the rest of the Fix installs), and TombstoneFix refuses with
// dialect.ErrTombstoneKeyName. A column that differs in case is another column on
// PostgreSQL (quoted names are exact), and its tombstone guard installs.
func TestTombstoneKeyColumnNamedLikeTombstoneColumn(t *testing.T) {
	for _, c := range [][2]string{{"deleted_at", "fence_token"}, {"fence_token", "tok"}, {`"Deleted_At"`, "fence_token"}} {
		t.Run(c[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			dsn := testdb.Postgres(t)
			raw := rawWith(t, dsn, "CREATE TABLE accounts ("+c[0]+" BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, "+c[1]+" BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
			spec := schema.GuardSpec{Table: "accounts", TokenColumn: c[1]}
			reps, err := schema.Check(ctx, raw, postgres.Dialect, spec)
			if err != nil {
				t.Fatal(err)
			}
			applyFix(t, ctx, raw, reps[0].Fix)
			clash := !strings.HasPrefix(c[0], `"`)
			reported := strings.Contains(strings.Join(reps[0].Problems, "\n"), "named like the tombstone table's column")
			if reported != clash {
				t.Fatalf("key column %s: problem reported %v, want %v: %q", c[0], reported, clash, reps[0].Problems)
			}
			_, err = schema.TombstoneFix(ctx, raw, postgres.Dialect, spec)
			if errors.Is(err, dialect.ErrTombstoneKeyName) != clash {
				t.Fatalf("TombstoneFix for key column %s: %v", c[0], err)
			}
			reps, err = schema.Check(ctx, raw, postgres.Dialect, spec)
			if err != nil || reps[0].Tombstoned == clash || !reps[0].Guarded {
				t.Fatalf("schema.Check after the Fix: %+v %v", reps, err)
			}
		})
	}
}

// applyFix runs fix in one transaction, failing the test on the first error.
func applyFix(t *testing.T, ctx context.Context, raw *sql.DB, fix []string) {
	t.Helper()
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, q := range fix {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatalf("schema.Check's Fix fails: %s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
