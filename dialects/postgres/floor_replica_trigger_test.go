package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestFloorReplicaOnlyGuardNotCounted: accounts is guarded (schema.Check's Fix), then
// its guard trigger is set ENABLE REPLICA (tgenabled 'R'), which fires only in
// sessions with session_replication_role = replica, so it judges no ordinary write:
// a plain UPDATE stores fence_token 8 under a floor of 100 (shown below). The floor
// coverage check (flooredRel: tgenabled <> 'D') counts it as a floor-reading guard,
// so RaiseTokenFloor(100) and TokenFloor report the floor in force for accounts.
// Right behaviour: a guard trigger that does not fire in origin sessions ('R', as
// 'D') does not cover the table: RaiseTokenFloor fails with ErrFloorUncovered naming
// public.accounts (GuardInstalledQuery and the lazy check already demand 'A').
func TestFloorReplicaOnlyGuardNotCounted(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 3)`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	testdb.Exec(t, raw, `ALTER TABLE accounts ENABLE REPLICA TRIGGER fencedsql_guard`)
	raiseErr := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100)
	// The guard does not fire: a write with a token below the floor is stored.
	if _, err := raw.ExecContext(ctx, "UPDATE accounts SET fence_token = 8, version = version + 1, balance = 1 WHERE id = 1"); err != nil {
		t.Fatalf("case wrong: the REPLICA guard refused a below-floor write: %v", err)
	}
	if !errors.Is(raiseErr, schema.ErrFloorUncovered) {
		t.Errorf("FAIL-OPEN: RaiseTokenFloor(100) with accounts' guard ENABLE REPLICA (it judges no ordinary write; a token-8 write was just stored) = %v; want ErrFloorUncovered naming public.accounts", raiseErr)
	}
	if f, err := schema.TokenFloor(ctx, raw, postgres.Dialect); !errors.Is(err, schema.ErrFloorUncovered) {
		t.Errorf("FAIL-OPEN: TokenFloor = %d, %v; want ErrFloorUncovered", f, err)
	}
}

// TestPartitionReplicaOnlyGuardIsDoor: accounts is partitioned and guarded
// (schema.Check's Fix: the guard's triggers are cloned onto each partition); the floor
// is raised to 100. Then the partition's cloned guard is set ENABLE REPLICA, so it
// fires in no ordinary session. unflooredRelatives (and the floor coverage,
// flooredRel: tgenabled <> 'D') count 'R' as floored, and ownTriggers skips cloned
// triggers, so the lazy check lets a fenced pool write through: a stale token 8,
// below the floor but above the row's token 5, updates the partition's row. Right
// behaviour: a relative whose guard trigger does not fire in origin sessions is an
// unfloored relative (ErrSchema), or the write fails with ErrBelowFloor; nothing
// changes.
func TestPartitionReplicaOnlyGuardIsDoor(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) PARTITION BY RANGE (id)`,
		`CREATE TABLE accounts_p1 PARTITION OF accounts FOR VALUES FROM (0) TO (1000)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 3)`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); err != nil {
		t.Fatalf("case wrong: RaiseTokenFloor on the guarded partitioned table: %v", err)
	}
	testdb.Exec(t, raw, `ALTER TABLE accounts_p1 ENABLE REPLICA TRIGGER fencedsql_guard`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	_, werr := db.ExecContext(fencedsql.WithToken(ctx, 8), "UPDATE accounts SET balance = 1 WHERE id = 1")
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if werr == nil || bal != 100 {
		t.Errorf("FAIL-OPEN: stale token 8 under floor 100, the partition's guard ENABLE REPLICA: err=%v, row now balance=%d fence_token=%d; want ErrSchema or ErrBelowFloor and the row unchanged (100, 5)", werr, bal, tok)
	}
}
