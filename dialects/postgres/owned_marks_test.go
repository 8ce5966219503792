package postgres_test

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestOwnedMarkLostOrChangedFixConverges (red-team rt57b F3): every guard install marks
// the objects it derives from the table's name with a COMMENT naming the table
// (ownedMark). A COMMENT is not part of the guard: it is lost by a dump restored with
// pg_dump --no-comments (or a schema copy tool that skips comments), and overwritten
// by any COMMENT ON its owner issues. The install's ownership check (ownedCheck) had
// refused, for ever, an object of a hashed name without the mark or any object marked
// for another table, so the Fix of a lost guard trigger never converged. Ownership is
// now the catalog's first: a group whose trigger function a trigger on the table runs
// is the table's, and the install re-marks it.
//
// Generator: seeded random table name (short: plain names; long: hashed names),
// random derived object (guard function, fast or slow fence, tombstone function,
// recorder, tombstone table), random mark change (removed; another text; a mark
// naming another table). Oracle: after the change and a lost guard trigger, -apply
// (ApplyRounds) converges to OK and a stale plain write is refused.
func TestOwnedMarkLostOrChangedFixConverges(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	type obj struct {
		like, kind string
		tomb       bool
	}
	objs := []obj{
		{"fencedsql_guard_%", "FUNCTION", false},
		{"fencedsql_fence_%", "FUNCTION", false},
		{"fencedsql_fenced_%", "FUNCTION", false},
		{"fencedsql_tombstone_%", "FUNCTION", true},
		{"fencedsql_tombclaim_%", "FUNCTION", true},
		{"fencedsql_tomb\\_%", "TABLE", true},
	}
	marks := []string{"NULL", "'documented by the DBA team'", "'fencedsql: derived from the guarded table ledger'"}
	for trial := 0; trial < 6; trial++ {
		long := trial%2 == 1
		name := "owned_m" + strconv.Itoa(trial)
		if long {
			name = "owned_long_" + strings.Repeat("m", 50) + strconv.Itoa(trial)
		}
		o := objs[rng.Intn(len(objs))]
		mark := marks[rng.Intn(len(marks))]
		if !long && mark != marks[2] && rng.Intn(2) == 0 {
			mark = marks[2] // plain names refuse only another table's mark
		}
		if trial == 1 {
			o, mark = objs[0], marks[0] // pg_dump --no-comments of a hashed name's guard
		}
		t.Run(fmt.Sprintf("%s/%s/%s", map[bool]string{false: "plain", true: "hashed"}[long], strings.TrimSuffix(o.like, "%"), mark), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			dsn := testdb.Postgres(t)
			raw := rawWith(t, dsn,
				"CREATE TABLE "+name+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
				"INSERT INTO "+name+" (id, balance, fence_token, version) VALUES (1, 100, 10, 1)")
			spec := schema.GuardSpec{Table: name}
			if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, spec); err != nil || !longAllOK(reps) {
				t.Fatalf("apply: %v %q", err, fencetest.ReportProblems(reps))
			}
			var target string
			q := "SELECT 'FUNCTION ' || p.oid::regprocedure::text FROM pg_proc p WHERE p.proname LIKE $1 AND p.pronamespace = 'public'::regnamespace"
			if o.kind == "TABLE" {
				q = "SELECT 'TABLE ' || c.oid::regclass::text FROM pg_class c WHERE c.relname LIKE $1 AND c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace"
			}
			if err := raw.QueryRowContext(ctx, q, o.like+"owned%").Scan(&target); err != nil {
				t.Fatalf("%s: %v", o.like, err)
			}
			testdb.Exec(t, raw, "COMMENT ON "+target+" IS "+mark)
			// The guard (or the tombstone guard) needs its Fix: one of its triggers lost.
			trg := "fencedsql_guard"
			if o.tomb {
				trg = "fencedsql_tombstone_insert"
			}
			testdb.Exec(t, raw, "DROP TRIGGER "+trg+" ON "+longTrunc(name))
			reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, spec)
			if err != nil || !longAllOK(reps) {
				t.Errorf("-apply after COMMENT ON %s IS %s and the trigger %s lost: %v %q; want the Fix to converge", target, mark, trg, err, fencetest.ReportProblems(reps))
			}
			raw.ExecContext(ctx, "UPDATE "+longTrunc(name)+" SET balance = -1, fence_token = 5, version = version + 1 WHERE id = 1")
			var bal int64
			if err := raw.QueryRowContext(ctx, "SELECT balance FROM "+longTrunc(name)+" WHERE id = 1").Scan(&bal); err != nil || bal != 100 {
				if trg == "fencedsql_guard" {
					t.Errorf("stale plain write after the -apply that should have restored the guard trigger: balance %d (%v); want 100", bal, err)
				}
			}
		})
	}
}

// TestOwnedMarkLostCollisionStillRefused (red-team rt57b F3, the other side): with the
// marks gone (pg_dump --no-comments), a table whose name spells another table's hashed
// guard function name is still refused before anything is created — the other
// table's triggers run that function — and the other table's guard keeps refusing a
// stale plain write.
func TestOwnedMarkLostCollisionStillRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw, long, short := guardedLongAndItsSpelling(ctx, t, dsn)
	testdb.Exec(t, raw, `DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT 'FUNCTION ' || p.oid::regprocedure::text AS o FROM pg_proc p WHERE p.proname LIKE 'fencedsql\_%' AND p.pronamespace = 'public'::regnamespace
    UNION ALL SELECT 'TABLE ' || c.oid::regclass::text FROM pg_class c WHERE c.relname LIKE 'fencedsql\_tomb\_%' AND c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace
  LOOP EXECUTE 'COMMENT ON ' || r.o || ' IS NULL'; END LOOP; END $$`)
	_, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: short})
	if err == nil || !strings.Contains(err.Error(), "42710") {
		t.Errorf("apply %s, whose guard function %s's triggers run (marks lost): %v; want the install refused (duplicate_object)", short, long, err)
	}
	raw.ExecContext(ctx, "UPDATE "+long+" SET balance = -1, tok = 5, version = version + 1 WHERE id = 1")
	var bal int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM "+longTrunc(long)+" WHERE id = 1").Scan(&bal); err != nil || bal != 100 {
		t.Errorf("a stale plain write to %s after %s's -apply: balance %d (%v); want 100", long, short, bal, err)
	}
}
