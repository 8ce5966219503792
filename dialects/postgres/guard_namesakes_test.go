package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// namesakeAccounts creates and guards accounts (the fence_token/version columns).
func namesakeAccounts(t *testing.T, ctx context.Context) (string, *sql.DB) {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: "accounts"}); err != nil || !longAllOK(reps) {
		t.Fatalf("apply: %v %q", err, fencetest.ReportProblems(reps))
	}
	return dsn, raw
}

// TestGuardNamesakeTakesNoDelete (red-team rt57b F2): a function carrying the name of
// one of the guard's functions with another signature, in the table's schema — which
// anyone with CREATE on the schema can add — must neither take a call of the guard
// nor break the table's DELETEs. The one-statement DELETE calls the fence with both
// arguments cast to bigint (an untyped token parameter had been resolved to an
// overload (bigint, double precision), found ambiguous beside (bigint, real) or
// (bigint, numeric) — a raw 42725 — or typed text beside (bigint, text), which pgx
// could not encode); an overload whose extra parameters have defaults, which makes
// even the exact call ambiguous, makes DeleteFenceQuery send the two statements.
// schema.Check reports each such function (guardNamesakes) and the Fix drops it.
//
// Generator: seeded random overload signatures (of the fence, the slow fence, the
// guard function), row tokens, DELETE spellings; a control without an overload.
// Oracle: Check reports the namesake; the current holder's DELETE deletes its row; a
// stale holder's DELETE of a newer row is ErrFenced and deletes nothing; -apply
// converges and drops the namesake.
func TestGuardNamesakeTakesNoDelete(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	// ambiguous makes even the exactly typed call ambiguous (42725): always tried.
	const ambiguous = "fencedsql_fence_accounts(cur bigint, tok bigint, x integer DEFAULT 0)"
	sigs := []string{
		"fencedsql_fence_accounts(cur bigint, tok double precision)",
		"fencedsql_fence_accounts(cur bigint, tok real)",
		"fencedsql_fence_accounts(cur bigint, tok numeric)",
		"fencedsql_fence_accounts(cur bigint, tok text)",
		"fencedsql_fence_accounts(cur bigint, tok varchar)",
		"fencedsql_fenced_accounts(cur bigint, tok bigint, x integer DEFAULT 0)",
		"fencedsql_fenced_accounts(cur bigint, tok double precision)",
		"fencedsql_guard_accounts(x integer)",
	}
	forms := []string{
		"DELETE FROM accounts WHERE id = $1",
		"DELETE FROM accounts WHERE id = $1 AND balance >= 0",
		"DELETE FROM public.accounts WHERE id IN ($1)",
	}
	rng.Shuffle(len(sigs), func(i, j int) { sigs[i], sigs[j] = sigs[j], sigs[i] })
	picked := append([]string{"", ambiguous}, sigs[:4]...)
	for _, sig := range picked { // "": the control, no namesake
		form := forms[rng.Intn(len(forms))]
		rowTok := 5 + rng.Int63n(10)
		holder := rowTok + 10 + rng.Int63n(10)
		stale := rowTok + 1 + rng.Int63n(5) // below row 2's token (holder)
		t.Run("namesake "+sig, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			dsn, raw := namesakeAccounts(t, ctx)
			spec := schema.GuardSpec{Table: "accounts"}
			testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, "+itoa(rowTok)+", 1), (2, 100, "+itoa(holder)+", 1)")
			if sig != "" {
				testdb.Exec(t, raw, "CREATE FUNCTION public."+sig+" RETURNS integer LANGUAGE sql AS 'SELECT 1'")
			}
			reps, err := schema.Check(ctx, raw, postgres.Dialect, spec)
			if err != nil {
				t.Fatal(err)
			}
			if sig == "" && !longAllOK(reps) {
				t.Fatalf("control: Check without a namesake: %q", fencetest.ReportProblems(reps))
			}
			if sig != "" && longAllOK(reps) {
				t.Errorf("schema.Check with %s beside the guard's functions: OK; want it reported", sig)
			}
			fenced := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			_, serr := fenced.ExecContext(fencedsql.WithToken(ctx, uint64(stale)), form, 2)
			if !errors.Is(serr, fencedsql.ErrFenced) {
				t.Errorf("stale %q of row 2 (at %d) under %d, namesake %s: %v; want ErrFenced", form, holder, stale, sig, serr)
			}
			if _, herr := fenced.ExecContext(fencedsql.WithToken(ctx, uint64(holder)), form, 1); herr != nil {
				t.Errorf("the holder's %q of row 1 (at %d) under %d, namesake %s: %v; want it deleted", form, rowTok, holder, sig, herr)
			}
			var n1, n2 int
			if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FILTER (WHERE id = 1), COUNT(*) FILTER (WHERE id = 2) FROM accounts").Scan(&n1, &n2); err != nil {
				t.Fatal(err)
			}
			if n1 != 0 || n2 != 1 {
				t.Errorf("namesake %s: row 1 left %d (want 0, the holder's), row 2 left %d (want 1, the stale holder's refused)", sig, n1, n2)
			}
			if sig == "" {
				return
			}
			if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, spec); err != nil || !longAllOK(reps) {
				t.Errorf("-apply with the namesake %s: %v %q; want it to converge", sig, err, fencetest.ReportProblems(reps))
			}
			var left int
			if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM pg_proc WHERE proname LIKE 'fencedsql\\_%\\_accounts' AND pronamespace = 'public'::regnamespace").Scan(&left); err != nil || left != 5 {
				t.Errorf("functions of the guards' names after -apply: %d (%v); want the guard's own 5 (guard, fence, slow fence, tombstone, recorder)", left, err)
			}
		})
	}
}

// TestGuardNamesakeCannotRaiseMark (red-team rt57b F1, fail-open): an overload of the
// fence's name (bigint, double precision) that sets fencedsql_guard.delete_token
// higher had been the one-statement DELETE's per-row fence (the token an untyped
// parameter), run after the mark's InitPlan: the row guard's DELETE trigger then
// skipped every later row, and a stale holder deleted rows written under a newer
// token. With the fence called on exact types it never runs.
//
// Generator: seeded random row count (2..6), which rows carry the newer token (never
// the first read), the stale token, and the DELETE's spelling. Oracle: the stale
// holder's DELETE is ErrFenced and deletes no row written under a newer token.
func TestGuardNamesakeCannotRaiseMark(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	forms := []string{"DELETE FROM accounts WHERE balance >= $1", "DELETE FROM accounts WHERE id > $1 - 1000", "DELETE FROM public.accounts WHERE balance <> $1 - 1"}
	for trial := 0; trial < 4; trial++ {
		control := trial == 0 // no overload: the fence refuses
		rows := 2 + rng.Intn(5)
		stale := int64(20 + rng.Intn(10))
		newer := map[int]bool{}
		for i := 2; i <= rows; i++ {
			if rng.Intn(2) == 0 || i == rows {
				newer[i] = true
			}
		}
		form := forms[rng.Intn(len(forms))]
		t.Run(fmt.Sprintf("rows=%d/control=%v", rows, control), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			dsn, raw := namesakeAccounts(t, ctx)
			for i := 1; i <= rows; i++ {
				tok := int64(10)
				if newer[i] {
					tok = stale + 30
				}
				testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO accounts (id, balance, fence_token, version) VALUES (%d, 100, %d, 1)", i, tok))
			}
			if !control {
				testdb.Exec(t, raw, `CREATE FUNCTION public.fencedsql_fence_accounts(cur bigint, tok double precision) RETURNS integer LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM pg_catalog.set_config('fencedsql_guard.delete_token', '9000000000000000000', true);
  RETURN 1;
END $f$`)
			}
			fenced := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			_, err := fenced.ExecContext(fencedsql.WithToken(ctx, uint64(stale)), form, 0)
			var left int
			if qerr := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE fence_token > $1", stale).Scan(&left); qerr != nil {
				t.Fatal(qerr)
			}
			if left != len(newer) || !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("stale %q under %d over %d rows (%d written under %d): err %v; %d of the newer rows left; want ErrFenced and all %d left",
					form, stale, rows, len(newer), stale+30, err, left, len(newer))
			}
		})
	}
}
