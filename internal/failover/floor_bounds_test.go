// The floor bounds under concurrency, on every backend: what the switching procedure
// relies on from LastToken and RaiseFloor (lockclient.FloorRaiser) holds while clients
// grant, wait, give up and release (from a red-team pass, kept as a permanent check).

package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// floorEvent is one timed call: a grant (tok), a LastToken (tok = its answer) or a
// RaiseFloor (tok = its min), with the local times it started and returned.
type floorEvent struct {
	kind       byte // 'g' grant, 'l' LastToken, 'r' RaiseFloor
	tok        uint64
	start, end time.Time
}

// TestFloorBoundsConcurrent: on every backend, clients grant contended and
// uncontended locks (TryAcquire and waiting Acquire, releases and give-ups) while other
// goroutines call LastToken and RaiseFloor (random mins, some below, some above the
// last token) from another Client of the same service. The checker states what the
// switching procedure relies on (lockclient.FloorRaiser): a grant that returned before
// a LastToken started is at most its answer; a grant that started after a LastToken
// returned is above its answer; a grant that started after a RaiseFloor(min) returned
// is above min; no two grants share a token; LastToken answers never go down between
// calls that do not overlap.
//
// Each backend runs for 2s by default; FENCEDSQL_SCHEDULES_FLOOR_RUN (a duration) sets
// another for longer runs.
func TestFloorBoundsConcurrent(t *testing.T) {
	for _, name := range []string{"memlock", "etcd", "etcd-compacting", "redis", "sqllock-postgres", "sqllock-mariadb"} {
		t.Run(name, func(t *testing.T) {
			mk := floorBoundsBackend(t, name)
			runFloorBounds(t, mk)
		})
	}
}

func floorBoundsBackend(t *testing.T, name string) func() lockclient.Backend {
	ctx := context.Background()
	switch name {
	case "memlock":
		svc := memlock.New(memlock.WithMinToken(7))
		return func() lockclient.Backend { return svc }
	case "etcd", "etcd-compacting":
		cluster := etcdtest.StartSingle(t)
		cli := cluster.Client(t)
		if name == "etcd-compacting" {
			// Compaction to the current revision every few milliseconds: a grant priced
			// by reading the floor key at its revision may find it compacted away.
			cctx, ccancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			t.Cleanup(func() { ccancel(); <-done })
			go func() {
				defer close(done)
				for cctx.Err() == nil {
					if r, err := cli.Get(cctx, "/floorbounds/"); err == nil {
						_, _ = cli.Compact(cctx, r.Header.Revision)
					}
					time.Sleep(3 * time.Millisecond)
				}
			}()
		}
		return func() lockclient.Backend { return etcdlock.New(cli, etcdlock.WithPrefix("/floorbounds/")) }
	case "redis":
		addr, prefix := testdb.Redis(t)
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rdb.Close() })
		return func() lockclient.Backend { return redislock.New(rdb, redislock.WithPrefix(prefix)) }
	default:
		driver, dsn, dia := "pgx", testdb.Postgres(t), sqllock.Postgres
		if name == "sqllock-mariadb" {
			driver, dsn, dia = "mysql", testdb.MySQL(t), sqllock.MySQL
		}
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := sqllock.CreateTable(ctx, db, dia, "floor_bounds_leases"); err != nil {
			t.Fatal(err)
		}
		return func() lockclient.Backend {
			b, err := sqllock.New(db, sqllock.WithDialect(dia), sqllock.WithTable("floor_bounds_leases"), sqllock.WithPollInterval(5*time.Millisecond, 20*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func runFloorBounds(t *testing.T, mk func() lockclient.Backend) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var events []floorEvent
	record := func(e floorEvent) { mu.Lock(); events = append(events, e); mu.Unlock() }
	admin := lockclient.New(mk(), lockclient.WithTTL(10*time.Second))
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	run := time.Now().Add(floorBoundsRun(t))
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []error
	note := func(err error) {
		if err != nil && !errors.Is(err, lockclient.ErrHeld) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, lockclient.ErrUnavailable) {
			errMu.Lock()
			errs = append(errs, err)
			errMu.Unlock()
		}
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := lockclient.New(mk(), lockclient.WithTTL(10*time.Second))
			defer c.Close(context.Background()) //nolint:errcheck
			rng := rand.New(rand.NewPCG(uint64(w), 51))
			var hist []string
			for time.Now().Before(run) && ctx.Err() == nil {
				key := fmt.Sprintf("k%d", rng.IntN(3))
				if rng.IntN(3) == 0 {
					key = fmt.Sprintf("own%d-%d", w, rng.IntN(1000))
				}
				start := time.Now()
				var l *lockclient.Lease
				var err error
				how := "try"
				if rng.IntN(2) == 0 {
					l, err = c.TryAcquire(ctx, key)
				} else {
					how = "acquire"
					actx, acancel := context.WithTimeout(ctx, time.Duration(5+rng.IntN(100))*time.Millisecond)
					l, err = c.Acquire(actx, key)
					acancel()
				}
				end := time.Now()
				var tok uint64
				if l != nil {
					tok = l.Token()
				}
				hist = append(hist, fmt.Sprintf("%s %s at %s: token %d, %v", how, key, start.Format("05.000000"), tok, err))
				if err != nil {
					note(err)
					continue
				}
				record(floorEvent{'g', l.Token(), start, end})
				time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
				if rerr := l.Release(ctx); rerr != nil {
					// A grant lost milliseconds after it returned, with a 10 s TTL, is a
					// bug (etcd: an abandoned queue key's late delete took a later grant
					// of the same key; see etcdlock's TestAbandonedKeyDeleteSparesLaterGrant).
					note(fmt.Errorf("worker %d: release %v after the grant returned: %w; history: %q", w, time.Since(end), rerr, hist[max(0, len(hist)-6):]))
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // LastToken and RaiseFloor
		defer wg.Done()
		rng := rand.New(rand.NewPCG(99, 51))
		for time.Now().Before(run) && ctx.Err() == nil {
			start := time.Now()
			last, err := admin.LastToken(ctx)
			end := time.Now()
			if err != nil {
				note(err)
				continue
			}
			record(floorEvent{'l', last, start, end})
			if rng.IntN(3) == 0 {
				min := last + uint64(rng.IntN(40))
				if rng.IntN(2) == 0 && last > 5 {
					min = last - uint64(rng.IntN(5))
				}
				start = time.Now()
				err := admin.RaiseFloor(ctx, min)
				end = time.Now()
				if err != nil {
					note(err)
					continue
				}
				record(floorEvent{'r', min, start, end})
			}
			time.Sleep(time.Duration(rng.IntN(10)) * time.Millisecond)
		}
	}()
	wg.Wait()
	for _, err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	var grants, bounds []floorEvent
	seen := map[uint64]bool{}
	for _, e := range events {
		if e.kind == 'g' {
			if seen[e.tok] {
				t.Errorf("token %d granted twice", e.tok)
			}
			seen[e.tok] = true
			grants = append(grants, e)
		} else {
			bounds = append(bounds, e)
		}
	}
	bad := 0
	for _, b := range bounds {
		for _, g := range grants {
			switch {
			case b.kind == 'l' && g.end.Before(b.start) && g.tok > b.tok:
				t.Errorf("grant %d returned before LastToken started, which answered %d", g.tok, b.tok)
				bad++
			case g.start.After(b.end) && g.tok <= b.tok:
				t.Errorf("grant %d started after %c(%d) returned", g.tok, b.kind, b.tok)
				bad++
			}
			if bad > 10 {
				t.FailNow()
			}
		}
	}
	var prev *floorEvent
	for i := range bounds {
		b := &bounds[i]
		if b.kind != 'l' {
			continue
		}
		if prev != nil && prev.end.Before(b.start) && b.tok < prev.tok {
			t.Errorf("LastToken went down: %d then %d", prev.tok, b.tok)
		}
		prev = b
	}
	t.Logf("%d grants, %d LastToken/RaiseFloor calls", len(grants), len(bounds))
}

// floorBoundsRun is how long each backend of TestFloorBoundsConcurrent runs:
// FENCEDSQL_SCHEDULES_FLOOR_RUN, 2s by default.
func floorBoundsRun(t *testing.T) time.Duration {
	v := os.Getenv("FENCEDSQL_SCHEDULES_FLOOR_RUN")
	if v == "" {
		return 2 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("FENCEDSQL_SCHEDULES_FLOOR_RUN=%q: want a positive duration", v)
	}
	return d
}
