package postgres_test

// Routines of the guards' names that PostgreSQL's name resolution might prefer to the
// guards' own (red-team rt58e, held attacks kept as generators): a fence function of
// the exact signature earlier on the pool's search_path, overloads of the absence
// recorder's name of odd kinds (variadic, polymorphic, domain), and an impostor
// recorder in another schema of the path. None takes the call.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestFenceNamesakeEarlierOnSearchPathTakesNoCall: the one-statement DELETE calls the fence
// function by the registry's name; for an unqualified registry entry (fenced_tables=
// accounts) the call is unqualified (fenceFuncName keeps table.Schema == ""), so
// PostgreSQL resolves it through the session's search_path. A function of the fence's
// exact signature (bigint, bigint) created in a schema earlier on that search_path
// after the pool asked DeleteFenceQuery (asked once per pool and table) takes the
// call: the condition is the attacker's, and the stale holder's DELETE of a newer
// row must still be refused (ErrFenced) and delete nothing.
//
// Generator: seeded row tokens / stale tokens / DELETE spellings / body of the
// impostor (constant 1, the guard's own slow path called with cur=tok, …).
func TestFenceNamesakeEarlierOnSearchPathTakesNoCall(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	bodies := []string{
		"SELECT 1",
		"SELECT CASE WHEN tok IS NULL THEN NULL ELSE 1 END",
		"SELECT public.fencedsql_fenced_accounts(tok, tok)",
	}
	forms := []string{
		"DELETE FROM accounts WHERE id = $1",
		"DELETE FROM accounts WHERE id = $1 AND balance >= 0",
		"DELETE FROM accounts WHERE id IN ($1)",
	}
	for trial := 0; trial < 3; trial++ {
		body := bodies[trial%len(bodies)]
		form := forms[rng.Intn(len(forms))]
		rowTok := 5 + rng.Int63n(10)
		holder := rowTok + 10 + rng.Int63n(10)
		stale := rowTok + 1 + rng.Int63n(5)
		t.Run(fmt.Sprintf("trial%d", trial), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			dsn, raw := namesakeAccounts(t, ctx)
			testdb.Exec(t, raw, "CREATE SCHEMA evil_path", "CREATE TABLE evil_path.calls (x int)",
				"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, "+itoa(rowTok)+", 1), (2, 100, "+itoa(holder)+", 1), (3, 100, "+itoa(rowTok)+", 1)")
			fenced := testdb.Open(t, "fenced-pgx", dsn+"&search_path=evil_path,public&fenced_tables=accounts")
			// Warm the pool: its first DELETE asks DeleteFenceQuery (one statement).
			if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, uint64(holder)), form, 3); err != nil {
				t.Fatalf("warm-up DELETE: %v", err)
			}
			testdb.Exec(t, raw, "CREATE FUNCTION evil_path.fencedsql_fence_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE sql AS $$INSERT INTO evil_path.calls VALUES (1); "+body+"$$")
			_, serr := fenced.ExecContext(fencedsql.WithToken(ctx, uint64(stale)), form, 2)
			var calls int
			raw.QueryRowContext(ctx, "SELECT count(*) FROM evil_path.calls").Scan(&calls)
			t.Logf("stale DELETE: %v; impostor calls %d", serr, calls)
			var n2 int
			if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE id = 2").Scan(&n2); err != nil {
				t.Fatal(err)
			}
			if n2 != 1 || !errors.Is(serr, fencedsql.ErrFenced) {
				t.Errorf("seed %d body %q form %q: stale DELETE under %d of row 2 (written under %d), impostor fence earlier on the search_path: err %v, row 2 left %d; want ErrFenced and the row kept",
					seed, body, form, stale, holder, serr, n2)
			}
		})
	}
}

// TestRecorderOverloadsOfOddKindsTakeNoCall: overloads of the absence recorder's name that
// an exactly cast call could be captured by or made ambiguous by, beyond defaults:
// a variadic one whose expansion is the exact signature, polymorphic (anyelement,
// anycompatible) ones, a domain over int8, a variadic with a default. Generator: a
// seeded pick of two per trial. Oracle: the claim of an absent key either records
// (then an older INSERT of the key is ErrFenced) or is refused with ErrUnsupported —
// never a raw driver error, never the overload's call; Check reports each overload
// and -apply converges.
func TestRecorderOverloadsOfOddKindsTakeNoCall(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	sigs := []string{
		"(bigint, bigint, VARIADIC boolean[])",
		"(anyelement, anyelement, boolean)",
		"(anycompatible, anycompatible, anycompatible)",
		"(i8_domain, bigint, boolean)",
		"(bigint, i8_domain, boolean)",
		"(VARIADIC anyarray)",
		"(bigint, VARIADIC bigint[])",
		"(anyelement, bigint, boolean, x integer DEFAULT 0)",
		"(i8_domain, bigint, boolean, VARIADIC x integer[] DEFAULT '{}')",
	}
	for trial := 0; trial < 3; trial++ {
		rng.Shuffle(len(sigs), func(i, j int) { sigs[i], sigs[j] = sigs[j], sigs[i] })
		picked := []string{sigs[0], sigs[1]}
		t.Run(fmt.Sprintf("trial%d", trial), func(t *testing.T) {
			raw, db := absentAcc(t)
			testdb.Exec(t, raw, "CREATE DOMAIN public.i8_domain AS bigint")
			for _, s := range picked {
				testdb.Exec(t, raw, "CREATE FUNCTION public.fencedsql_tombclaim_acc"+s+" RETURNS integer LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'the overload took the call'; END$$")
			}
			ctx := fencedsql.WithToken(context.Background(), 60)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			err = tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 7).Scan(&id)
			switch {
			case errors.Is(err, fencedsql.ErrUnsupported):
				tx.Rollback() //nolint:errcheck
				t.Logf("seed %d %q: claim refused ErrUnsupported", seed, picked)
			case errors.Is(err, sql.ErrNoRows):
				if err := tx.Commit(); err != nil {
					t.Fatalf("seed %d %q: commit of the claim: %v", seed, picked, err)
				}
				if err := insertAs(db, 40, "INSERT INTO acc (id) VALUES (7)"); !errors.Is(err, fencedsql.ErrFenced) {
					t.Errorf("seed %d %q: INSERT under 40 of key 7 claimed absent under 60: %v, want ErrFenced", seed, picked, err)
				}
			default:
				tx.Rollback() //nolint:errcheck
				t.Errorf("seed %d overloads %q: claim of absent key 7: %v; want no row (recorded) or ErrUnsupported", seed, picked, err)
			}
			if err := insertAs(db, 60, "INSERT INTO acc (id) VALUES (8)"); err != nil {
				t.Errorf("seed %d %q: INSERT of key 8 beside the overloads: %v", seed, picked, err)
			}
			recorderNamesakesFixed(t, raw, len(picked))
		})
	}
}

// TestRecorderImpostorInOtherSchemaTakesNoCall: a table in a schema other than public,
// named unqualified by the pool (fenced_tables=acc, search_path app,public). Its
// recorder lives in the table's schema; a routine of the recorder's exact signature in
// another schema on the path (public, where anyone with CREATE there can add one)
// must never take the claim's call. Generator: seeded position of the impostor's
// schema on the search_path (before/after the table's), key and tokens. Oracle: the
// claim of an absent key under T is recorded (an INSERT of the key under a lower
// token is ErrFenced) and the impostor is never called.
func TestRecorderImpostorInOtherSchemaTakesNoCall(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	for trial := 0; trial < 2; trial++ {
		path := []string{"app_schema,public", "public,app_schema"}[trial]
		key := 7 + rng.Int63n(100)
		tok := 60 + rng.Int63n(20)
		stale := 30 + rng.Int63n(29)
		t.Run(path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			dsn := testdb.Postgres(t)
			raw := rawWith(t, dsn, "CREATE SCHEMA app_schema",
				"CREATE TABLE app_schema.acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
				"CREATE TABLE public.impostor_calls (x int)")
			if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: "app_schema.acc"}); err != nil || !longAllOK(reps) {
				t.Fatalf("apply: %v %q", err, fencetest.ReportProblems(reps))
			}
			testdb.Exec(t, raw, "CREATE FUNCTION public.fencedsql_tombclaim_acc(bigint, bigint, boolean) RETURNS integer LANGUAGE sql AS $$INSERT INTO public.impostor_calls VALUES (1); SELECT 1$$",
				"CREATE FUNCTION public.fencedsql_tombclaim_acc(bigint, bigint) RETURNS integer LANGUAGE sql AS $$INSERT INTO public.impostor_calls VALUES (1); SELECT 1$$")
			db := testdb.Open(t, "fenced-pgx", dsn+"&search_path="+path+"&fenced_tables=acc")
			cctx := fencedsql.WithToken(ctx, uint64(tok))
			tx, err := db.BeginTx(cctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			err = tx.QueryRowContext(cctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", key).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				err = tx.Commit()
			} else {
				tx.Rollback() //nolint:errcheck
			}
			var calls int
			raw.QueryRowContext(ctx, "SELECT count(*) FROM public.impostor_calls").Scan(&calls)
			if err != nil {
				t.Logf("claim: %v", err)
			}
			if calls > 0 {
				t.Errorf("seed %d path %s: the impostor public.fencedsql_tombclaim_acc took %d calls (claim err %v)", seed, path, calls, err)
			}
			if err == nil {
				if ierr := insertAs(db, uint64(stale), "INSERT INTO acc (id) VALUES ($1)", key); !errors.Is(ierr, fencedsql.ErrFenced) {
					t.Errorf("seed %d path %s: INSERT under %d of key %d claimed absent under %d: %v, want ErrFenced", seed, path, stale, key, tok, ierr)
				}
			} else if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("seed %d path %s: claim of absent key: %v; want no row or a typed refusal", seed, path, err)
			}
		})
	}
}
