package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestStaleSnapshotWriteAfterDelete (red-team rt58b, held): a stale holder (token 30)
// opens a transaction under a drawn session profile (isolation_profiles_test.go) and
// level, optionally reads the key (its snapshot), the current holder (50, another
// profile, autocommit or a transaction) DELETEs the key and commits, the stale
// transaction writes the key by a drawn shape and commits. Oracle: the key stays
// absent; errors typed. At most isolationProfilesBudget by default; FENCEDSQL_SCHEDULES_SEED
// replays, FENCEDSQL_SCHEDULES_ITERS=n runs n cases with no time budget.
func TestStaleSnapshotWriteAfterDelete(t *testing.T) {
	dsn, raw := sessionAcc(t)
	profs := sessionProfiles(t, dsn)[:6]
	shapes := []string{
		"INSERT INTO acc (id, balance) VALUES ($1, 7)",
		"INSERT INTO acc (id, balance) VALUES ($1, 7) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance",
		"INSERT INTO acc (id, balance) VALUES ($1, 7) ON CONFLICT DO NOTHING",
		"INSERT INTO acc (id, balance) VALUES ($1, 7), ($1 + 500000, 7)",
		"UPDATE acc SET balance = 7 WHERE id = $1",
		"claim+INSERT",
		"DELETE+INSERT",
		"SAVEPOINT+INSERT",
	}
	isos := []sql.IsolationLevel{sql.LevelDefault, sql.LevelReadUncommitted, sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable}
	k := schedKnobsFromEnv(t, 1000)
	r := rand.New(rand.NewSource(k.seed))
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=<cases run>)", k.seed, k.seed)
	ctx := context.Background()
	start := time.Now()
	stats := map[string]int{}
	ran := 0
	for it := 0; it < k.iters && (k.itersSet || time.Since(start) < isolationProfilesBudget); it++ {
		ran++
		key := int64(900000 + it)
		if _, err := raw.Exec("INSERT INTO acc (id, balance, fence_token, version) VALUES ($1, 1, 10, 1)", key); err != nil {
			t.Fatal(err)
		}
		ps, pc := profs[r.Intn(len(profs))], profs[r.Intn(len(profs))]
		iso := isos[r.Intn(len(isos))]
		shape := shapes[r.Intn(len(shapes))]
		readFirst := r.Intn(3) != 0
		curTx := r.Intn(2) == 0
		desc := fmt.Sprintf("it %d: stale[%s iso=%v readFirst=%v] cur[%s tx=%v] shape %q", it, ps.name, iso, readFirst, pc.name, curTx, shape)
		old := fencedsql.WithToken(ctx, 30)
		stx, err := ps.fenced.BeginTx(old, &sql.TxOptions{Isolation: iso})
		if err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		if readFirst {
			var n int
			if err := stx.QueryRowContext(old, "SELECT count(*) FROM acc WHERE id = $1", key).Scan(&n); err != nil {
				t.Errorf("%s: read: %v", desc, err)
			}
		}
		cur := fencedsql.WithToken(ctx, 50)
		var derr error
		if curTx {
			c2, err := pc.fenced.BeginTx(cur, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, derr = c2.ExecContext(cur, "DELETE FROM acc WHERE id = $1", key)
			if derr == nil {
				derr = c2.Commit()
			} else {
				c2.Rollback() //nolint:errcheck
			}
		} else {
			_, derr = pc.fenced.ExecContext(cur, "DELETE FROM acc WHERE id = $1", key)
		}
		if derr != nil {
			stx.Rollback() //nolint:errcheck
			t.Errorf("%s: current delete: %T %v", desc, derr, derr)
			continue
		}
		var werr error
		switch shape {
		case "claim+INSERT":
			var id int64
			e := stx.QueryRowContext(old, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", key).Scan(&id)
			if e == nil || e == sql.ErrNoRows {
				_, werr = stx.ExecContext(old, "INSERT INTO acc (id, balance) VALUES ($1, 7)", key)
			} else {
				werr = e
			}
		case "DELETE+INSERT":
			_, werr = stx.ExecContext(old, "DELETE FROM acc WHERE id = $1", key)
			if werr == nil {
				_, werr = stx.ExecContext(old, "INSERT INTO acc (id, balance) VALUES ($1, 7)", key)
			}
		case "SAVEPOINT+INSERT":
			_, werr = stx.ExecContext(old, "SAVEPOINT s1")
			if werr == nil {
				_, werr = stx.ExecContext(old, "INSERT INTO acc (id, balance) VALUES ($1, 7)", key)
				if werr != nil {
					stx.ExecContext(old, "ROLLBACK TO SAVEPOINT s1") //nolint:errcheck
					stats["sp-rolledback"]++
					werr2 := werr
					_, werr = stx.ExecContext(old, "INSERT INTO acc (id, balance) VALUES ($1, 8) ON CONFLICT (id) DO UPDATE SET balance = 8", key)
					if werr == nil {
						werr = fmt.Errorf("second insert passed after %v", werr2)
					}
				}
			}
		default:
			_, werr = stx.ExecContext(old, shape, key)
		}
		cerr := stx.Commit()
		switch {
		case werr == nil && cerr == nil:
			stats["stale-committed"]++
		case errors.Is(werr, fencedsql.ErrFenced):
			stats["ErrFenced"]++
		case werr != nil:
			stats[schedErrClass(werr)]++
		default:
			stats["commit-err"]++
		}
		if werr != nil && !sessionAllowed(werr, false) {
			t.Errorf("%s: stale write: untyped %T %v", desc, werr, werr)
		}
		var n int
		var tok sql.NullInt64
		raw.QueryRow("SELECT count(*), max(fence_token) FROM acc WHERE id = $1", key).Scan(&n, &tok) //nolint:errcheck
		if n != 0 {
			t.Errorf("%s: key deleted under 50 is back (token %v); stale write err %v, commit err %v", desc, tok, werr, cerr)
		}
	}
	t.Logf("%d cases in %v; stats: %v", ran, time.Since(start).Round(time.Millisecond), stats)
}
