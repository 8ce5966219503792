package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// replicaRaise writes the floor as logical replication's apply worker applies a raise:
// in a session with session_replication_role = replica.
func replicaRaise(t *testing.T, ctx context.Context, raw *sql.DB, floor string) {
	t.Helper()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"BEGIN", "SET LOCAL session_replication_role = replica",
		"UPDATE fencedsql_floor SET floor = " + floor + " WHERE id = 1", "COMMIT"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestFloorSyncNotAlwaysRefused (red-team rt50a F1): the floor's sync trigger
// fencedsql_floor_sync set back from ENABLE ALWAYS — by ALTER TABLE … ENABLE TRIGGER
// ALL, which pg_restore --data-only --disable-triggers emits; to ENABLE REPLICA; or
// disabled — does not fire for some raises (one applied by a logical replication apply
// worker, in replica mode, for the first), and the guards' copy of the floor stays
// below it. schema.Check names the sync trigger (the guard itself reported installed)
// with a Fix that re-enables it ALWAYS and re-copies the floor; the fenced pool
// refuses the table (ErrSchema); TokenFloor and RaiseTokenFloor fail with
// ErrFloorUnsafe. After the Fix, the copy equals the floor and a write below it is
// refused (ErrBelowFloor).
func TestFloorSyncNotAlwaysRefused(t *testing.T) {
	for _, c := range []struct{ name, demote string }{
		{"EnableTriggerAll", "ALTER TABLE fencedsql_floor DISABLE TRIGGER ALL; ALTER TABLE fencedsql_floor ENABLE TRIGGER ALL"},
		{"EnableReplica", "ALTER TABLE fencedsql_floor ENABLE REPLICA TRIGGER fencedsql_floor_sync"},
		{"Disable", "ALTER TABLE fencedsql_floor DISABLE TRIGGER fencedsql_floor_sync"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); err != nil {
				t.Fatal(err)
			}
			testdb.Exec(t, raw, strings.Split(c.demote, "; ")...)
			// The raise: in replica mode (origin mode for ENABLE REPLICA, where the
			// trigger does not fire then).
			if c.name == "EnableReplica" {
				testdb.Exec(t, raw, "UPDATE fencedsql_floor SET floor = 1000 WHERE id = 1")
			} else {
				replicaRaise(t, ctx, raw, "1000")
			}
			reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				t.Fatal(err)
			}
			r := reps[0]
			var door *dialect.SideDoor
			for i, sd := range r.SideDoors {
				if sd.Kind == dialect.SideDoorGuardTable && strings.Contains(sd.Problem, "fencedsql_floor_sync") && len(sd.Fix) > 0 {
					door = &r.SideDoors[i]
				}
			}
			if r.OK() || !r.Guarded || door == nil {
				t.Fatalf("schema.Check: OK=%v Guarded=%v problems %q; want the guard installed and a guard-table door naming fencedsql_floor_sync, with a Fix", r.OK(), r.Guarded, r.Problems)
			}
			if tf, err := schema.TokenFloor(ctx, raw, postgres.Dialect); !errors.Is(err, schema.ErrFloorUnsafe) {
				t.Errorf("TokenFloor = %d, %v; want ErrFloorUnsafe", tf, err)
			}
			if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 1000); !errors.Is(err, schema.ErrFloorUnsafe) {
				t.Errorf("RaiseTokenFloor: %v; want ErrFloorUnsafe", err)
			}
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			_, uerr := db.ExecContext(fencedsql.WithToken(ctx, 500), "UPDATE accounts SET balance = 6 WHERE id = 1")
			_, ierr := db.ExecContext(fencedsql.WithToken(ctx, 500), "INSERT INTO accounts (id, balance) VALUES (7, 1)")
			for what, e := range map[string]error{"UPDATE": uerr, "INSERT": ierr} {
				if !errors.Is(e, fencedsql.ErrSchema) {
					t.Errorf("fenced %s under 500, floor 1000, copy 100: %v; want ErrSchema", what, e)
				}
			}
			db.Close()
			fixRestores(t, ctx, raw, r.Fix)
			var mode string
			var copyv, floor int64
			if err := raw.QueryRowContext(ctx, `SELECT (SELECT tgenabled::text FROM pg_trigger WHERE tgname = 'fencedsql_floor_sync'),
  pg_sequence_last_value('fencedsql_floor_seq'), (SELECT floor FROM fencedsql_floor WHERE id = 1)`).Scan(&mode, &copyv, &floor); err != nil {
				t.Fatal(err)
			}
			if mode != "A" || copyv != 1000 || floor != 1000 {
				t.Errorf("after the Fix: sync trigger %q, copy %d, floor %d; want A, 1000, 1000", mode, copyv, floor)
			}
			if tf, err := schema.TokenFloor(ctx, raw, postgres.Dialect); err != nil || tf != 1000 {
				t.Errorf("TokenFloor after the Fix = %d, %v; want 1000", tf, err)
			}
			db = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 500), "UPDATE accounts SET balance = 6 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
				t.Errorf("fenced UPDATE under 500 after the Fix: %v; want ErrBelowFloor", err)
			}
		})
	}
}

// TestFloorCopyBelowReported (red-team rt50a F1, the class): the guards' copy of the
// floor below the floor by any route — here the floor's owner lowering the sequence,
// the sync trigger intact — makes TokenFloor fail with ErrFloorUnsafe (the floor it
// would report is not the one the guards' fast path enforces) and schema.Check report
// the stale copy. A raise (which writes the floor's row) puts the copy back.
func TestFloorCopyBelowReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 1000); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "SELECT pg_catalog.setval('fencedsql_floor_seq', 100)")
	if tf, err := schema.TokenFloor(ctx, raw, postgres.Dialect); !errors.Is(err, schema.ErrFloorUnsafe) || !strings.Contains(err.Error(), "copy") {
		t.Errorf("TokenFloor with the copy at 100, the floor at 1000 = %d, %v; want ErrFloorUnsafe naming the copy", tf, err)
	}
	if fl, err := schema.TokenFloors(ctx, raw, postgres.Dialect); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Errorf("TokenFloors with the copy at 100, the floor at 1000 = %v, %v; want ErrFloorUnsafe", fl, err)
	}
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() || !strings.Contains(strings.Join(reps[0].Problems, " "), "copy, which the guards' fast path reads, is below its floor") {
		t.Errorf("schema.Check with the copy below the floor: OK=%v problems %q; want the stale copy reported", reps[0].OK(), reps[0].Problems)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 1000); err != nil {
		t.Fatal(err)
	}
	if tf, err := schema.TokenFloor(ctx, raw, postgres.Dialect); err != nil || tf != 1000 {
		t.Errorf("TokenFloor after the raise = %d, %v; want 1000", tf, err)
	}
	// Read through a fenced pool too (TokenFloor only reads).
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if tf, err := schema.TokenFloor(ctx, db, postgres.Dialect); err != nil || tf != 1000 {
		t.Errorf("TokenFloor through a fenced pool = %d, %v; want 1000", tf, err)
	}
}
