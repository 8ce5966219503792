package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestStaleSnapshotWriteAfterDelete (red-team rt58b, held): the generator
// fencetest.StaleAfterDelete on PostgreSQL. A stale holder (token 30) opens a
// transaction under a drawn session profile (isolation_profiles_test.go) and level,
// optionally reads the key (its snapshot), the current holder (50, another profile,
// autocommit or a transaction) DELETEs the key and commits, the stale transaction
// writes the key by a drawn shape and commits. Oracle: the key stays absent; errors
// typed. At most isolationProfilesBudget by default; FENCEDSQL_SCHEDULES_SEED
// replays, FENCEDSQL_SCHEDULES_ITERS=n runs n cases with no time budget.
func TestStaleSnapshotWriteAfterDelete(t *testing.T) {
	dsn, raw := sessionAcc(t)
	profs := sessionProfiles(t, dsn)[:6]
	pools := make([]fencetest.Pool, len(profs))
	for i, p := range profs {
		pools[i] = fencetest.Pool{Name: p.name, DB: p.fenced}
	}
	const insert = "INSERT INTO acc (id, balance) VALUES ($1, 7)"
	k := schedKnobsFromEnv(t, 1000)
	fencetest.StaleAfterDelete{
		Pools:  pools,
		Levels: []sql.IsolationLevel{sql.LevelDefault, sql.LevelReadUncommitted, sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable},
		Writes: []fencetest.StaleWrite{
			fencetest.ExecWrite(insert, 1),
			fencetest.ExecWrite("INSERT INTO acc (id, balance) VALUES ($1, 7) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance", 1),
			fencetest.ExecWrite("INSERT INTO acc (id, balance) VALUES ($1, 7) ON CONFLICT DO NOTHING", 1),
			fencetest.ExecWrite("INSERT INTO acc (id, balance) VALUES ($1, 7), ($1 + 500000, 7)", 1),
			fencetest.ExecWrite("UPDATE acc SET balance = 7 WHERE id = $1", 1),
			fencetest.ThenInsert("claim+INSERT", "SELECT id FROM acc WHERE id = $1 FOR UPDATE", true, insert),
			fencetest.ThenInsert("DELETE+INSERT", "DELETE FROM acc WHERE id = $1", false, insert),
			{Name: "SAVEPOINT+INSERT", Write: savepointReinsert},
		},
		Stale: 30, Current: 50,
		Seed: func(key int64) error {
			_, err := raw.Exec("INSERT INTO acc (id, balance, fence_token, version) VALUES ($1, 1, 10, 1)", key)
			return err
		},
		Read:   "SELECT count(*) FROM acc WHERE id = $1",
		Delete: "DELETE FROM acc WHERE id = $1",
		Present: func(key int64) (n int, tok sql.NullInt64) {
			raw.QueryRow("SELECT count(*), max(fence_token) FROM acc WHERE id = $1", key).Scan(&n, &tok) //nolint:errcheck
			return n, tok
		},
		Allowed: func(err error) bool { return sessionAllowed(err, false) },
		Class:   schedErrClass,
		Knobs:   fencetest.ScheduleKnobs{Seed: k.seed, Iters: k.iters, ItersSet: k.itersSet},
		Budget:  isolationProfilesBudget,
	}.Run(t)
}

// savepointReinsert inserts the key under a savepoint and, when that is refused,
// rolls back to the savepoint and tries again with an upsert: the second attempt
// must be refused too.
func savepointReinsert(ctx context.Context, tx *sql.Tx, key int64) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT s1"); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO acc (id, balance) VALUES ($1, 7)", key)
	if err == nil {
		return nil
	}
	tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT s1") //nolint:errcheck
	if _, err2 := tx.ExecContext(ctx, "INSERT INTO acc (id, balance) VALUES ($1, 8) ON CONFLICT (id) DO UPDATE SET balance = 8", key); err2 != nil {
		return err2
	}
	return fmt.Errorf("second insert passed after %v", err)
}
