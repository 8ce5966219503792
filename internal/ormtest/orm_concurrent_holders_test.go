package ormtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestConcurrentHoldersGORM (red-team rt53c): a newer holder (token 50) and an older
// one (token 20) make random GORM calls — Save, OnConflict{UpdateAll} upsert, Update of
// an expression, soft delete, hard delete, Unscoped restore, Create; default
// transaction and SkipDefaultTransaction at random — on the same three keys at once.
// Invariant: no call of the older holder that began after the newer holder's committed
// write to a key reports a row changed, and every key the newer holder wrote ends as
// its last write left it: never with the older token, gone after a hard delete,
// soft-deleted after a soft delete.
//
// Knobs (environment, as for the generated chains, generated_test.go):
// FENCEDSQL_SCHEDULES_ITERS=n is the newer holder's calls per database (default 20; the
// older holder makes three times as many), FENCEDSQL_SCHEDULES_SEED=n seeds the two
// holders' call sequences (default time-based, logged; the interleaving is the
// servers', so a replay repeats the calls, not necessarily their order). A long run:
// FENCEDSQL_SCHEDULES_ITERS=1000 go test -timeout 0 -count=1 -run TestConcurrentHoldersGORM ./internal/ormtest/
func TestConcurrentHoldersGORM(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 20)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d), %d calls of the newer holder per database", k.Seed, k.Seed, k.Iters)
	ops := []string{"Save", "Upsert", "Update", "SoftDelete", "HardDelete", "Restore", "Create"}
	do := func(g *gorm.DB, ctx context.Context, op string, key int64) (int64, error) {
		s := gormShapes[int(key)%len(gormShapes)]
		g = g.WithContext(ctx)
		switch op {
		case "Save":
			g = g.Save(s.new(key, 777))
		case "Upsert":
			g = g.Clauses(clause.OnConflict{UpdateAll: true}).Create(s.new(key, 778))
		case "Update":
			g = g.Model(s.zero(key)).Update("balance", gorm.Expr("balance + 1"))
		case "SoftDelete":
			g = g.Delete(s.zero(key))
		case "HardDelete":
			g = g.Unscoped().Delete(s.zero(key))
		case "Restore":
			g = g.Unscoped().Model(s.zero(key)).Update("deleted_at", nil)
		default:
			g = g.Create(s.new(key, 779))
		}
		return g.RowsAffected, g.Error
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			gdbs := []*gorm.DB{openGORM(t, e, false), openGORM(t, e, true)}
			base := newID()
			keys := []int64{base, base + 1, base + 2}
			for _, key := range keys {
				e.seed(t, key, tokOld)
			}
			ctx := testCtx(t)
			// touched[i]: the newer holder has committed a write to keys[i].
			var touched [3]atomic.Bool
			violations := make(chan string, 3*k.Iters)
			done := make(chan struct{})
			olderWins := 0
			go func() { // the older holder
				defer close(done)
				r := rand.New(rand.NewPCG(uint64(k.Seed), 1))
				for range 3 * k.Iters {
					g, op, i := gdbs[r.IntN(2)], ops[r.IntN(len(ops))], r.IntN(len(keys))
					wasTouched := touched[i].Load()
					n, err := do(g, fencedsql.WithToken(ctx, tokMine), op, keys[i])
					if err != nil {
						continue
					}
					olderWins++
					if wasTouched && n > 0 {
						row, rerr := e.rowErr(keys[i])
						violations <- fmt.Sprintf("token %d's %s of key %d reported %d rows changed after token %d had committed a write to it (row now %v %v)",
							tokMine, op, keys[i], n, tokNewer, row, rerr)
					}
				}
			}()
			newerLast := make([]string, len(keys)) // the newer holder's last write that changed a row
			r := rand.New(rand.NewPCG(uint64(k.Seed), 2))
			for range k.Iters {
				g, op, i := gdbs[r.IntN(2)], ops[r.IntN(len(ops))], r.IntN(len(keys))
				if n, err := do(g, fencedsql.WithToken(ctx, tokNewer), op, keys[i]); err == nil && n > 0 {
					newerLast[i] = op
					touched[i].Store(true)
				}
			}
			<-done
			close(violations)
			for v := range violations {
				t.Error(v)
			}
			t.Logf("older holder's calls that succeeded: %d of %d", olderWins, 3*k.Iters)
			for i, key := range keys {
				last := newerLast[i]
				if last == "" {
					continue
				}
				row := e.row(t, key)
				switch {
				case row.Exists && row.Token == int64(tokMine):
					t.Errorf("key %d: final row %v carries token %d after token %d's %s", key, row, tokMine, tokNewer, last)
				case last == "HardDelete" && row.Exists:
					t.Errorf("key %d: token %d's last write was a hard delete, final row %v", key, tokNewer, row)
				case last == "SoftDelete" && row.Exists && !row.Deleted:
					t.Errorf("key %d: token %d's last write was a soft delete, final row %v", key, tokNewer, row)
				}
			}
		})
	}
}
