package sqlite_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	moderncsqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// TestStaleLeaseRefusedAfterRedisLostCounter (end to end; red-team rt45d F1): the
// application switched to a Redis lock service configured WithMinToken(m), the retired
// service's Retire answer, far above the Redis clock; the database floor is m+1 (the
// switch procedure). Holder A is granted account:7 and pauses before its write. Redis
// restarts without persistence. Holder B (a new process, same configuration) is
// granted account:7 and writes balance 100. A resumes within its TTL and writes
// balance 0: refused, B's write stays. Before the fix the lost counter was seeded at
// m+1, B got a token below A's, and A's stale write overwrote B's.
func TestStaleLeaseRefusedAfterRedisLostCounter(t *testing.T) {
	addr := os.Getenv("FENCEDSQL_REDIS_ADDR")
	if addr == "" {
		t.Skip("FENCEDSQL_REDIS_ADDR not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	prefix := "fencedsql:sqlite:" + t.Name() + ":"
	delAll := func() {
		keys, err := rdb.Keys(context.Background(), prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			if err := rdb.Del(context.Background(), keys...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer delAll()

	file, raw := regressionGuardedFile(t, ctx)
	const m = uint64(1) << 54
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, m+1); err != nil {
		t.Fatal(err)
	}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&moderncsqlite.Driver{}, file), fencedsql.WithDialect(sqlite.Dialect),
		fencedsql.Guard("accounts"))
	defer db.Close()

	a := lockclient.New(redislock.New(rdb, redislock.WithPrefix(prefix), redislock.WithMinToken(m)),
		lockclient.WithTTL(10*time.Second), lockclient.WithOwner("a"))
	defer a.Close(context.Background())
	for i, k := range []string{"account:1", "account:2"} {
		l, err := a.Acquire(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(fencedsql.WithLease(ctx, l), "INSERT INTO accounts (id, balance) VALUES (?, 5)", i+1); err != nil {
			t.Fatal(err)
		}
		_ = l.Release(ctx)
	}
	stale, err := a.Acquire(ctx, "account:7")
	if err != nil {
		t.Fatal(err)
	}
	// A pauses. Redis restarts without persistence (this service's keys are gone).
	delAll()

	b := lockclient.New(redislock.New(rdb, redislock.WithPrefix(prefix), redislock.WithMinToken(m)),
		lockclient.WithTTL(10*time.Second), lockclient.WithOwner("b"))
	defer b.Close(context.Background())
	fresh, err := b.Acquire(ctx, "account:7")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Release(context.Background())
	if _, err := db.ExecContext(fencedsql.WithLease(ctx, fresh), "INSERT INTO accounts (id, balance) VALUES (7, 100)"); err != nil {
		t.Fatalf("setup: the new holder's write (token %d): %v", fresh.Token(), err)
	}
	// A resumes.
	_, err = db.ExecContext(fencedsql.WithLease(ctx, stale), "UPDATE accounts SET balance = 0 WHERE id = 7")
	var bal int64
	var tok int64
	if qerr := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 7").Scan(&bal, &tok); qerr != nil {
		t.Fatal(qerr)
	}
	if err == nil || bal != 100 {
		t.Fatalf("the stale holder (token %d, granted before the lost counter) overwrote the new holder's write (token %d): err=%v, row balance=%d token=%d",
			stale.Token(), fresh.Token(), err, bal, tok)
	}
}
