package lockbench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// hold is how long a contender keeps the lock before releasing it.
const hold = time.Millisecond

// benchTTL is the lease TTL of every contender: long enough that no lease lapses during
// a window, so that only handoffs are measured.
const benchTTL = 10 * time.Second

// contender is one client taking the lock in turns.
type contender interface {
	// acquire takes key, waiting; release gives it back.
	acquire(ctx context.Context, key string) (release func(context.Context) error, err error)
}

// lockContender goes through a lockclient.Client.
type lockContender struct{ c *lockclient.Client }

func (l lockContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	lease, err := l.c.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return lease.Release, nil
}

// mutexContender is etcd's own concurrency.Mutex on its own session.
type mutexContender struct {
	s      *concurrency.Session
	prefix string
}

func (m mutexContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	mu := concurrency.NewMutex(m.s, m.prefix+key)
	if err := mu.Lock(ctx); err != nil {
		return nil, err
	}
	return mu.Unlock, nil
}

// backendSetup makes n contenders of one backend, each with its own client, closed when
// b ends; nil when the backend is not available here.
type backendSetup struct {
	name string
	make func(b *testing.B, n int) []contender
}

func newLockClient(b *testing.B, be lockclient.Backend, owner string) *lockclient.Client {
	c := lockclient.New(be, lockclient.WithOwner(owner), lockclient.WithTTL(benchTTL))
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Close(ctx)
	})
	return c
}

func setups(endpoints []string) []backendSetup {
	return []backendSetup{
		{"etcdlock", func(b *testing.B, n int) []contender {
			prefix := fmt.Sprintf("/lockbench/etcdlock/%d/", n)
			cs := make([]contender, n)
			for i := range n {
				cli := etcdtest.NewClient(b, endpoints...)
				cs[i] = lockContender{newLockClient(b, etcdlock.New(cli, etcdlock.WithPrefix(prefix)), fmt.Sprintf("c%d", i))}
			}
			return cs
		}},
		{"mutex", func(b *testing.B, n int) []contender {
			prefix := fmt.Sprintf("/lockbench/mutex/%d/", n)
			cs := make([]contender, n)
			for i := range n {
				cli := etcdtest.NewClient(b, endpoints...)
				s, err := concurrency.NewSession(cli, concurrency.WithTTL(int(benchTTL/time.Second)))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				cs[i] = mutexContender{s, prefix}
			}
			return cs
		}},
		{"redislock", func(b *testing.B, n int) []contender {
			if os.Getenv(testdb.EnvRedis) == "" {
				return nil
			}
			addr, prefix := testdb.Redis(b)
			cs := make([]contender, n)
			for i := range n {
				rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 4})
				b.Cleanup(func() { rdb.Close() })
				cs[i] = lockContender{newLockClient(b, redislock.New(rdb, redislock.WithPrefix(prefix)), fmt.Sprintf("c%d", i))}
			}
			return cs
		}},
		{"postgres", func(b *testing.B, n int) []contender {
			if os.Getenv(testdb.EnvPostgres) == "" {
				return nil
			}
			return sqlContenders(b, n, "pgx", testdb.Postgres(b), sqllock.Postgres, 3)
		}},
		{"mariadb", func(b *testing.B, n int) []contender {
			if os.Getenv(testdb.EnvMySQL) == "" {
				return nil
			}
			return sqlContenders(b, n, "mysql", testdb.MySQL(b), sqllock.MySQL, 2)
		}},
	}
}

// sqlContenders gives each contender its own small pool (a replica's own *sql.DB), on
// one fresh database with the lease table.
func sqlContenders(b *testing.B, n int, driver, dsn string, d sqllock.Dialect, conns int) []contender {
	ctx := context.Background()
	admin, err := sql.Open(driver, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	if err := sqllock.CreateTable(ctx, admin, d, sqllock.DefaultTable); err != nil {
		b.Fatal(err)
	}
	cs := make([]contender, n)
	for i := range n {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(conns)
		b.Cleanup(func() { db.Close() })
		be, err := sqllock.New(db)
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = lockContender{newLockClient(b, be, fmt.Sprintf("c%d", i))}
	}
	return cs
}

// results accumulates one backend's windows.
type results struct {
	waits     []time.Duration // completed acquires
	censored  time.Duration   // the longest wait still going when a window ended
	handoffs  int
	elapsed   time.Duration
	errors    int
	lastError error
}

func (r *results) quantile(q float64) time.Duration {
	if len(r.waits) == 0 {
		return 0
	}
	s := slices.Clone(r.waits)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// longest is the longest wait seen, including a wait cut off by the window's end.
func (r *results) longest() time.Duration {
	m := r.censored
	for _, w := range r.waits {
		m = max(m, w)
	}
	return m
}

func (r *results) rate() float64 { return float64(r.handoffs) / r.elapsed.Seconds() }

// runWindow lets every contender take key in turns for window.
func runWindow(cs []contender, key string, window time.Duration, r *results) {
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				release, err := c.acquire(ctx, key)
				w := time.Since(t0)
				if err != nil {
					mu.Lock()
					if ctx.Err() != nil {
						r.censored = max(r.censored, w)
					} else {
						r.errors++
						r.lastError = err
					}
					mu.Unlock()
					if ctx.Err() == nil {
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				mu.Lock()
				r.waits = append(r.waits, w)
				r.handoffs++
				mu.Unlock()
				time.Sleep(hold)
				rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
				if err := release(rctx); err != nil {
					mu.Lock()
					r.errors++
					r.lastError = err
					mu.Unlock()
				}
				rcancel()
			}
		}()
	}
	wg.Wait()
	r.elapsed += window // grants are counted within the window
}

func benchWindow() time.Duration {
	if s := os.Getenv("LOCKBENCH_WINDOW"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			return d
		}
	}
	return 3 * time.Second
}

func wanted(name string) bool {
	s := os.Getenv("LOCKBENCH_BACKENDS")
	return s == "" || slices.Contains(strings.Split(s, ","), name)
}

// warmUp has every contender take and release a lock once, unmeasured: a client's first
// Acquire also opens its connections (and sqllock's PostgreSQL listener), which is
// start-up cost, not the service's handoff.
func warmUp(b *testing.B, cs []contender) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := c.acquire(ctx, "warm")
			if err != nil {
				b.Errorf("warm-up acquire: %v", err)
				return
			}
			if err := release(ctx); err != nil {
				b.Errorf("warm-up release: %v", err)
			}
		}()
	}
	wg.Wait()
}

// BenchmarkContention: see the package documentation. Each iteration runs one window
// per backend, in an order that rotates from one iteration to the next; run it with
// -benchtime=Nx for N rounds.
func BenchmarkContention(b *testing.B) {
	cluster := etcdtest.Start(b, etcdtest.Options{Members: 1, Fsync: true})
	endpoints := cluster.Endpoints()
	window := benchWindow()
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("contenders=%d", n), func(b *testing.B) {
			type run struct {
				name string
				cs   []contender
				res  *results
			}
			var runs []run
			for _, s := range setups(endpoints) {
				if !wanted(s.name) {
					continue
				}
				cs := s.make(b, n)
				if cs == nil {
					b.Logf("%s: no server configured, left out", s.name)
					continue
				}
				runs = append(runs, run{s.name, cs, &results{}})
			}
			for _, r := range runs {
				warmUp(b, r.cs)
			}
			round := 0
			for b.Loop() {
				for i := range runs {
					r := runs[(i+round)%len(runs)]
					runWindow(r.cs, fmt.Sprintf("k%d", round), window, r.res)
				}
				round++
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			byName := map[string]*results{}
			for _, r := range runs {
				byName[r.name] = r.res
				res := r.res
				b.ReportMetric(res.rate(), r.name+"-handoffs/s")
				b.ReportMetric(ms(res.quantile(0.5)), r.name+"-p50-ms")
				b.ReportMetric(ms(res.quantile(0.99)), r.name+"-p99-ms")
				b.ReportMetric(ms(res.longest()), r.name+"-max-ms")
				if p50 := res.quantile(0.5); p50 > 0 {
					b.ReportMetric(float64(res.longest())/float64(p50), r.name+"-max/p50")
				}
				if res.errors > 0 {
					b.ReportMetric(float64(res.errors), r.name+"-errors")
					b.Logf("%s: %d errors, last: %v", r.name, res.errors, res.lastError)
				}
			}
			if l, m := byName["etcdlock"], byName["mutex"]; l != nil && m != nil && m.handoffs > 0 {
				b.ReportMetric(l.rate()/m.rate(), "etcdlock/mutex-handoffs")
				b.ReportMetric(float64(l.longest())/float64(m.longest()), "etcdlock/mutex-max")
			}
		})
	}
}
