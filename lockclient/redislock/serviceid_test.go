package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// Two Backends on one server and prefix — one dialing through a proxy, as a process
// that names the server by another address — share an identity; another prefix, or
// another database number with the same prefix, is another service (red-team rt42e
// F2). The identity survives a new Backend: it is stored beside the counter.
func TestServiceIdentity(t *testing.T) {
	n := newNamespace(t)
	addr, other := testdb.Redis(t)
	direct := newClient(t, addr)
	db1 := redis.NewClient(&redis.Options{Addr: addr, DB: 1})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		keys, _ := db1.Keys(ctx, n.prefix+"*").Result()
		if len(keys) > 0 {
			db1.Del(ctx, keys...)
		}
		db1.Close()
	})
	locktest.ServiceIdentity(t,
		[]lockclient.Backend{n.backend("a"), redislock.New(direct, redislock.WithPrefix(n.prefix)), n.backend("b")},
		redislock.New(direct, redislock.WithPrefix(other)),
		redislock.New(db1, redislock.WithPrefix(n.prefix)))
}
