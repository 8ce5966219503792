package postgres_test

// Red-team rt22a: the planner's literal and body checks (plan/protect_literal.go,
// protect_strings.go, protect_reach.go, protect_settings.go) on PostgreSQL 15.

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// bodyCheckSetup makes a guarded accounts table (row 1 at token 5, floor 50) and returns
// the raw pool and a fenced pool with fenced_allow=allow ("" for none).
func bodyCheckSetup(t *testing.T, allow string, setup ...string) (raw, fenced *sql.DB) {
	t.Helper()
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw = testdb.Open(t, "pgx", dsn, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	g := postgres.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	if len(setup) > 0 {
		testdb.Exec(t, raw, setup...)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	param := "fenced_tables=accounts"
	if allow != "" {
		param += "&fenced_allow=" + allow
	}
	db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, param))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return raw, db
}

// TestDynamicBodiesDisablingGuardTriggersRefused (fail-open under WithDynamicSQL). Two
// spellings of a DO body get an UPDATE of pg_trigger past protect_reach.go's catalog
// check through the fenced pool (the same UPDATE in a plain DO $$…$$ is refused):
//
//   - escaped-quote: DO E'BEGIN PERFORM \'\'; UPDATE pg_trigger …; PERFORM \'\'; END'.
//     stringBody decodes \' to ' and then undoubles ” to ', so the planner lexes the
//     body with an opening quote where PostgreSQL has an empty string: the UPDATE is
//     inside a "string" to the body checks;
//   - nested-do: DO $a$ BEGIN DO $b$ BEGIN UPDATE pg_trigger …; END $b$; END $a$.
//     protectReachBodies skips "DO" as a block keyword before a statement's head, so
//     the nested DO's body is never lexed.
//
// The guard triggers of accounts are switched off (tgenabled = 'D') and a write under
// token 40, below the floor 50, is accepted.
//
// Right behaviour: both refused with ErrUnsupported (catalog write in a body).
func TestDynamicBodiesDisablingGuardTriggersRefused(t *testing.T) {
	const upd = "UPDATE pg_trigger SET tgenabled = $x$D$x$ WHERE tgname LIKE $y$fenced%$y$"
	for _, c := range []struct{ name, q string }{
		{"escaped-quote", `DO E'BEGIN PERFORM \'\'; ` + upd + `; PERFORM \'\'; END'`},
		{"nested-do", "DO $a$ BEGIN DO $b$ BEGIN " + upd + "; END $b$; END $a$"},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw, db := bodyCheckSetup(t, "dynamic_sql")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			control := "DO $a$ BEGIN " + upd + "; END $a$"
			if _, err := db.ExecContext(ctx, control); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("control %q: %v, want ErrUnsupported", control, err)
			}
			if _, err := db.ExecContext(ctx, c.q); err != nil {
				if !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("err = %v, want ErrUnsupported", err)
				}
				return
			}
			var disabled int
			if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'accounts'::regclass AND tgenabled = 'D'").Scan(&disabled); err != nil {
				t.Fatal(err)
			}
			_, werr := db.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id = 1")
			t.Errorf("%q went through the fenced pool (WithDynamicSQL): %d guard trigger(s) of accounts disabled in pg_trigger; write under token 40 below floor 50: err = %v", c.q, disabled, werr)
		})
	}
}

// TestSurgeryInDoBodyRefused (fail-open under WithDynamicSQL). protect_settings.go
// refuses heap_force_kill/heap_force_freeze "whatever the statement looks like", but
// only among the statement's own tokens: protectReachBodies judges a body without the
// surgery check. With pg_surgery installed (by an administrator), a DO block that
// finds the guarded table by a pattern (so no guarded name is in the text) kills its
// row's version through the fenced pool: the row is gone with no tombstone and no
// fence — a later insert under a stale token brings it back.
//
// Right behaviour: refused with ErrUnsupported (pg_surgery call in a body).
func TestSurgeryInDoBodyRefused(t *testing.T) {
	raw, db := bodyCheckSetup(t, "dynamic_sql", "CREATE EXTENSION IF NOT EXISTS pg_surgery")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	control := "SELECT heap_force_kill(c.oid, ARRAY['(0,1)']::tid[]) FROM pg_class c WHERE c.relname LIKE 'acc%' AND c.relkind = 'r'"
	if _, err := db.ExecContext(ctx, control); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("control %q: %v, want ErrUnsupported", control, err)
	}
	q := "DO $a$ BEGIN PERFORM heap_force_kill(c.oid, ARRAY['(0,1)']::tid[]) FROM pg_class c WHERE c.relname LIKE 'acc%' AND c.relkind = 'r'; END $a$"
	if _, err := db.ExecContext(ctx, q); err != nil {
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("err = %v, want ErrUnsupported", err)
		}
		return
	}
	var rows int
	_ = raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&rows)
	t.Errorf("%q went through the fenced pool (WithDynamicSQL); accounts now holds %d row(s) (row 1 killed by pg_surgery without trigger or tombstone)", q, rows)
}

// TestUescapeWordInDataRuns (over-refusal, default options). An ordinary
// write of an unguarded table, and a plain read, whose string data ends in the word
// "uescape" are refused: nestedUnicodeEscape takes the literal's own closing quote for
// the quote of a UESCAPE clause.
//
// Right behaviour: both run (the server reads no UESCAPE clause in them).
func TestUescapeWordInDataRuns(t *testing.T) {
	_, db := bodyCheckSetup(t, "", "CREATE TABLE other (id BIGINT PRIMARY KEY, s TEXT)")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, q := range []string{
		"INSERT INTO other (id, s) VALUES (1, 'uescape')",
		"SELECT count(*) FROM other WHERE s = 'see UESCAPE'",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Errorf("%q: %v; want it to run (data, not a UESCAPE clause)", q, err)
		}
	}
}
