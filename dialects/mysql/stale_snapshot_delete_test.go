package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestStaleSnapshotWriteAfterDelete (red-team rt58b, held): a generator. A stale holder (token 3) opens a
// transaction under a drawn session profile and BeginTx level (or the session
// default), reads the key (plain SELECT: its snapshot), optionally claims another
// absent key; the current holder (token 6, another drawn profile) DELETEs the key —
// in autocommit (the wrapper's own two-statement transaction) or in a transaction —
// and commits; then the stale transaction writes the key by a drawn shape (INSERT,
// ODKU, UPDATE, DELETE + INSERT, claim + INSERT, multi-row INSERT, INSERT IGNORE,
// REPLACE) and commits. Oracle: the key stays absent; errors typed. At most
// isolationProfilesBudget by default (isolation_profiles_test.go); FENCEDSQL_SCHEDULES_SEED
// replays, FENCEDSQL_SCHEDULES_ITERS=n runs n cases with no time budget.
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
	shapes := []string{
		"INSERT INTO acc (id, balance) VALUES (?, 7)",
		"INSERT INTO acc (id, balance) VALUES (?, 7) ON DUPLICATE KEY UPDATE balance = VALUES(balance)",
		"INSERT INTO acc (id, balance) VALUES (?, 7), (? + 500000, 7)",
		"INSERT IGNORE INTO acc (id, balance) VALUES (?, 7)",
		"REPLACE INTO acc (id, balance) VALUES (?, 7)",
		"UPDATE acc SET balance = 7 WHERE id = ?",
		"claim+INSERT",
		"DELETE+INSERT",
	}
	isos := []sql.IsolationLevel{sql.LevelDefault, sql.LevelReadUncommitted, sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable}
	k := schedKnobsFromEnv(t, 1000)
	r := rand.New(rand.NewSource(k.seed))
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=<cases run>)", k.seed, k.seed)
	ctx := context.Background()
	start := time.Now()
	bad, odd := 0, 0
	stats := map[string]int{}
	ran := 0
	for it := 0; it < k.iters && (k.itersSet || time.Since(start) < isolationProfilesBudget); it++ {
		ran++
		key := int64(900000 + it)
		if _, err := admin.Exec("INSERT INTO acc (id, balance, fence_token, version) VALUES (?, 1, 1, 1)", key); err != nil {
			t.Fatal(err)
		}
		ps, pc := profs[r.Intn(len(profs))], profs[r.Intn(len(profs))]
		iso := isos[r.Intn(len(isos))]
		shape := shapes[r.Intn(len(shapes))]
		readFirst := r.Intn(3) != 0
		curTx := r.Intn(2) == 0
		desc := fmt.Sprintf("it %d: stale[%s iso=%v readFirst=%v] cur[%s tx=%v] shape %q", it, ps.name, iso, readFirst, pc.name, curTx, shape)
		old := fencedsql.WithToken(ctx, 3)
		stx, err := ps.fenced.BeginTx(old, &sql.TxOptions{Isolation: iso})
		if err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		if readFirst {
			var n int
			if err := stx.QueryRowContext(old, "SELECT COUNT(*) FROM acc WHERE id = ?", key).Scan(&n); err != nil {
				t.Errorf("%s: read: %v", desc, err)
			}
		}
		cur := fencedsql.WithToken(ctx, 6)
		var derr error
		if curTx {
			ctx2, err := pc.fenced.BeginTx(cur, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, derr = ctx2.ExecContext(cur, "DELETE FROM acc WHERE id = ?", key)
			if derr == nil {
				derr = ctx2.Commit()
			} else {
				ctx2.Rollback() //nolint:errcheck
			}
		} else {
			_, derr = pc.fenced.ExecContext(cur, "DELETE FROM acc WHERE id = ?", key)
		}
		if derr != nil {
			// under SERIALIZABLE/RU the stale reader's shared lock may block it
			stx.Rollback() //nolint:errcheck
			if !schedExpected(derr) {
				t.Errorf("%s: current delete: %T %v", desc, derr, derr)
			}
			admin.Exec("DELETE FROM acc WHERE id = ?", key) //nolint:errcheck
			stats["delete-blocked"]++
			continue
		}
		var werr error
		switch shape {
		case "claim+INSERT":
			var id int64
			e := stx.QueryRowContext(old, "SELECT id FROM acc WHERE id = ? FOR UPDATE", key).Scan(&id)
			if e == nil || e == sql.ErrNoRows {
				_, werr = stx.ExecContext(old, "INSERT INTO acc (id, balance) VALUES (?, 7)", key)
			} else {
				werr = e
			}
		case "DELETE+INSERT":
			_, werr = stx.ExecContext(old, "DELETE FROM acc WHERE id = ?", key)
			if werr == nil {
				_, werr = stx.ExecContext(old, "INSERT INTO acc (id, balance) VALUES (?, 7)", key)
			}
		default:
			args := []any{key}
			if strings.Count(shape, "?") == 2 {
				args = append(args, key)
			}
			_, werr = stx.ExecContext(old, shape, args...)
		}
		cerr := stx.Commit()
		switch {
		case werr == nil && cerr == nil:
			stats["stale-committed-noop"]++
		case errors.Is(werr, fencedsql.ErrFenced):
			stats["ErrFenced"]++
		case werr != nil:
			stats[fmt.Sprintf("%T", werr)]++
			if errors.Is(werr, fencedsql.ErrUnsupported) && stats["unsup:"+shape] == 0 {
				stats["unsup:"+shape]++
				t.Logf("unsupported %q: %v", shape, werr)
			}
		default:
			stats["commit-err"]++
		}
		if werr != nil && !schedExpected(werr) && !strings.Contains(werr.Error(), "1020") && !errors.Is(werr, fencedsql.ErrUnsupported) {
			odd++
			t.Errorf("%s: stale write: untyped %T %v", desc, werr, werr)
		}
		var n int
		var tok sql.NullInt64
		admin.QueryRow("SELECT COUNT(*), MAX(fence_token) FROM acc WHERE id = ?", key).Scan(&n, &tok) //nolint:errcheck
		if n != 0 {
			bad++
			t.Errorf("%s: key deleted under 6 is back (token %v); stale write err %v, commit err %v", desc, tok, werr, cerr)
		}
	}
	t.Logf("%d cases in %v; stats: %v", ran, time.Since(start).Round(time.Millisecond), stats)
}
