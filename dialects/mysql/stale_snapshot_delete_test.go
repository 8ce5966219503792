package mysql_test

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestStaleSnapshotWriteAfterDelete (red-team rt58b, held): the generator
// fencetest.StaleAfterDelete on MariaDB. A stale holder (token 3) opens a transaction
// under a drawn session profile and BeginTx level (or the session default), reads
// the key (plain SELECT: its snapshot); the current holder (token 6, another drawn
// profile) DELETEs the key — in autocommit (the wrapper's own two-statement
// transaction) or in a transaction — and commits; then the stale transaction writes
// the key by a drawn shape (INSERT, ODKU, UPDATE, DELETE + INSERT, claim + INSERT,
// multi-row INSERT, INSERT IGNORE, REPLACE) and commits. Oracle: the key stays
// absent; errors typed. At most isolationProfilesBudget by default
// (isolation_profiles_test.go); FENCEDSQL_SCHEDULES_SEED replays,
// FENCEDSQL_SCHEDULES_ITERS=n runs n cases with no time budget.
func TestStaleSnapshotWriteAfterDelete(t *testing.T) {
	base, admin, _ := absentMy(t)
	profs := []*sessionProfile{
		{name: "default"},
		{name: "snapRR", params: []string{"innodb_snapshot_isolation=ON"}},
		{name: "SER", params: []string{"tx_isolation=%27SERIALIZABLE%27"}},
		{name: "RU", params: []string{"tx_isolation=%27READ-UNCOMMITTED%27"}},
		{name: "RC", params: []string{"tx_isolation=%27READ-COMMITTED%27"}},
	}
	openSessionProfiles(t, base, "2", false, profs)
	pools := make([]fencetest.Pool, len(profs))
	for i, p := range profs {
		pools[i] = fencetest.Pool{Name: p.name, DB: p.fenced}
	}
	const insert = "INSERT INTO acc (id, balance) VALUES (?, 7)"
	k := schedKnobsFromEnv(t, 1000)
	fencetest.StaleAfterDelete{
		Pools:  pools,
		Levels: []sql.IsolationLevel{sql.LevelDefault, sql.LevelReadUncommitted, sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable},
		Writes: []fencetest.StaleWrite{
			fencetest.ExecWrite(insert, 1),
			fencetest.ExecWrite("INSERT INTO acc (id, balance) VALUES (?, 7) ON DUPLICATE KEY UPDATE balance = VALUES(balance)", 1),
			fencetest.ExecWrite("INSERT INTO acc (id, balance) VALUES (?, 7), (? + 500000, 7)", 2),
			fencetest.ExecWrite("INSERT IGNORE INTO acc (id, balance) VALUES (?, 7)", 1),
			fencetest.ExecWrite("REPLACE INTO acc (id, balance) VALUES (?, 7)", 1),
			fencetest.ExecWrite("UPDATE acc SET balance = 7 WHERE id = ?", 1),
			fencetest.ThenInsert("claim+INSERT", "SELECT id FROM acc WHERE id = ? FOR UPDATE", true, insert),
			fencetest.ThenInsert("DELETE+INSERT", "DELETE FROM acc WHERE id = ?", false, insert),
		},
		Stale: 3, Current: 6,
		Seed: func(key int64) error {
			_, err := admin.Exec("INSERT INTO acc (id, balance, fence_token, version) VALUES (?, 1, 1, 1)", key)
			return err
		},
		Read:   "SELECT COUNT(*) FROM acc WHERE id = ?",
		Delete: "DELETE FROM acc WHERE id = ?",
		Present: func(key int64) (n int, tok sql.NullInt64) {
			admin.QueryRow("SELECT COUNT(*), MAX(fence_token) FROM acc WHERE id = ?", key).Scan(&n, &tok) //nolint:errcheck
			return n, tok
		},
		// under SERIALIZABLE/RU the stale reader's shared lock may block the DELETE
		DeleteMeets: schedExpected,
		Clear:       func(key int64) { admin.Exec("DELETE FROM acc WHERE id = ?", key) }, //nolint:errcheck
		Allowed: func(err error) bool {
			return schedExpected(err) || strings.Contains(err.Error(), "1020") || errors.Is(err, fencedsql.ErrUnsupported)
		},
		Knobs:  fencetest.ScheduleKnobs{Seed: k.seed, Iters: k.iters, ItersSet: k.itersSet},
		Budget: isolationProfilesBudget,
	}.Run(t)
}
