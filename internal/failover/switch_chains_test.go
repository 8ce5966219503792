// The README's lock-service switching procedure, followed literally along random chains
// of services of every backend (from a red-team pass, kept as a permanent check).

package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestSwitchChains follows the README's switching procedure literally
// (switchLockService: -max-token, -retire or -show, -raise, -show, -raise-floor) along
// random chains of fresh services of every backend — memlock, etcd, Redis, sqllock on
// PostgreSQL and on MariaDB — each new etcd/Redis/memlock/sqllock process configured
// with WithMinToken of the raised value, as the README asks. After each switch: the new
// service's first token is above every token the database has seen and above the old
// service's answer; no write of the new service is fenced; a holder of the old service
// granted before the switch is refused (ErrFenced: below the floor); and a straggler
// asking the old service gets no lease (ErrRetired, sqllock included).
//
// Three chains by default; FENCEDSQL_SCHEDULES_CHAINS sets another number for longer runs.
func TestSwitchChains(t *testing.T) {
	chains := 3
	if v := os.Getenv("FENCEDSQL_SCHEDULES_CHAINS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FENCEDSQL_SCHEDULES_CHAINS=%q: want a positive number", v)
		}
		chains = n
	}
	for seed := range chains {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runSwitchChain(t, uint64(seed)) })
	}
}

func runSwitchChain(t *testing.T, seed uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	raw, app := guardedAccounts(ctx, t)

	cluster := etcdtest.StartSingle(t)
	etcdCli := cluster.Client(t)
	raddr, rprefix := testdb.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: raddr})
	t.Cleanup(func() { rdb.Close() })
	mdb, err := sql.Open("mysql", testdb.MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mdb.Close() })
	n := 0
	// A service: its client, a wipe of its data (nil when not wiped here) and a new
	// process of the same configuration.
	type service struct {
		kind   string
		c      *lockclient.Client
		wipe   func()
		reopen func() *lockclient.Client
	}
	newService := func(kind string, min uint64) service {
		n++
		var mk func() lockclient.Backend
		var wipe func()
		switch kind {
		case "memlock":
			svc := memlock.New(memlock.WithMinToken(min))
			mk = func() lockclient.Backend { return svc }
		case "etcd":
			prefix := fmt.Sprintf("/switchchains/%d/", n)
			mk = func() lockclient.Backend {
				return etcdlock.New(etcdCli, etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(min))
			}
			wipe = func() {
				if _, err := etcdCli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
					t.Fatal(err)
				}
			}
		case "redis":
			prefix := fmt.Sprintf("%s%d:", rprefix, n)
			mk = func() lockclient.Backend {
				return redislock.New(rdb, redislock.WithPrefix(prefix), redislock.WithMinToken(min))
			}
			wipe = func() {
				keys, err := rdb.Keys(ctx, prefix+"*").Result()
				if err != nil {
					t.Fatal(err)
				}
				if len(keys) > 0 {
					if err := rdb.Del(ctx, keys...).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
		default:
			db, dia := raw, sqllock.Postgres
			if kind == "sqllock-mariadb" {
				db, dia = mdb, sqllock.MySQL
			}
			table := fmt.Sprintf("switch_chain_locks_%d", n)
			if err := sqllock.CreateTable(ctx, db, dia, table); err != nil {
				t.Fatal(err)
			}
			mk = func() lockclient.Backend {
				sb, err := sqllock.New(db, sqllock.WithDialect(dia), sqllock.WithTable(table), sqllock.WithMinToken(min))
				if err != nil {
					t.Fatal(err)
				}
				return sb
			}
		}
		reopen := func() *lockclient.Client {
			c := lockclient.New(mk(), lockclient.WithTTL(10*time.Second))
			t.Cleanup(func() { _ = c.Close(context.Background()) })
			return c
		}
		return service{kind, reopen(), wipe, reopen}
	}
	kinds := []string{"memlock", "etcd", "redis", "sqllock-postgres", "sqllock-mariadb"}
	rng := rand.New(rand.NewPCG(seed, 51))
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	kinds = append(kinds, kinds[0]) // back to a fresh service of the first kind
	t.Logf("chain: %v", kinds)
	var issued uint64 // the highest token any service of the chain granted
	acquire := func(c *lockclient.Client, key string) *lockclient.Lease {
		t.Helper()
		l, err := c.Acquire(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		issued = max(issued, l.Token())
		return l
	}
	cur := newService(kinds[0], 0)
	if w, f := transfers(ctx, t, cur.c, app, 6); f != 0 {
		t.Fatalf("%s: %d of %d writes fenced", kinds[0], f, w+f)
	}
	for _, kind := range kinds[1:] {
		stale := acquire(cur.c, "account:1")
		dbMax, err := schema.MaxToken(ctx, raw, postgres.Dialect)
		if err != nil {
			t.Fatal(err)
		}
		old, err := cur.c.Retire(ctx)
		if err != nil {
			t.Fatalf("retire: %v", err)
		}
		next := newService(kind, max(dbMax, old))
		if err := switchLockService(ctx, raw, cur.c, next.c); err != nil {
			t.Fatalf("switch to %s: %v", kind, err)
		}
		if _, err := app.ExecContext(fencedsql.WithLease(ctx, stale), "UPDATE accounts SET balance = balance + 1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("switch to %s: the old service's holder (token %d) wrote: %v, want ErrFenced", kind, stale.Token(), err)
		}
		if l, err := cur.c.TryAcquire(ctx, "account:2"); !errors.Is(err, lockclient.ErrRetired) {
			t.Errorf("switch to %s: a straggler of the old service was granted %v: %v, want ErrRetired", kind, l, err)
		}
		first := acquire(next.c, "account:0")
		if first.Token() <= max(dbMax, old) {
			t.Errorf("switch to %s: first token %d, not above the database's %d and the old service's %d", kind, first.Token(), dbMax, old)
		}
		_ = first.Release(ctx)
		if w, f := transfers(ctx, t, next.c, app, 6); f != 0 {
			t.Errorf("%s: %d of %d writes fenced after the switch", kind, f, w+f)
		}
		// The retired service's data wiped (README: "brings the old service back as a
		// fresh one"): a straggler process of it is refused at the database.
		if cur.wipe != nil {
			cur.wipe()
			straggler := cur.reopen()
			l, err := straggler.TryAcquire(ctx, "account:2")
			if err == nil {
				_, err = app.ExecContext(fencedsql.WithLease(ctx, l), "UPDATE accounts SET balance = balance + 1 WHERE id = 2")
				if !errors.Is(err, fencedsql.ErrFenced) {
					t.Errorf("%s wiped after its retirement: a straggler (token %d) wrote: %v, want ErrFenced (below the floor)", cur.kind, l.Token(), err)
				}
				_ = l.Release(ctx)
			} else {
				t.Logf("%s wiped after retirement: straggler refused: %v", cur.kind, err)
			}
		}
		// The new service loses its data while a lease is held: every later grant, by
		// the running process or a new one, is above every token issued before.
		if next.wipe != nil {
			held := acquire(next.c, "account:1")
			if _, err := app.ExecContext(fencedsql.WithLease(ctx, held), "UPDATE accounts SET balance = balance + 1 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			before := issued
			next.wipe()
			for i, c := range []*lockclient.Client{next.c, next.reopen()} {
				l, err := c.TryAcquire(ctx, "account:1")
				if err != nil {
					t.Logf("%s wiped: process %d: %v", kind, i, err)
					continue
				}
				if l.Token() <= before {
					t.Errorf("%s wiped: process %d granted token %d, not above %d issued before", kind, i, l.Token(), before)
				}
				issued = max(issued, l.Token())
				if _, err := app.ExecContext(fencedsql.WithLease(ctx, l), "UPDATE accounts SET balance = balance + 1 WHERE id = 1"); err != nil {
					t.Errorf("%s wiped: process %d (token %d) refused: %v", kind, i, l.Token(), err)
				}
				_ = l.Release(ctx)
			}
			if _, err := app.ExecContext(fencedsql.WithLease(ctx, held), "UPDATE accounts SET balance = balance + 1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, lockclient.ErrLeaseLost) {
				t.Errorf("%s wiped: the holder from before (token %d) wrote after a later holder: %v", kind, held.Token(), err)
			}
		}
		t.Logf("%s: dbMax %d old %d first %d", kind, dbMax, old, first.Token())
		cur = next
	}
}
