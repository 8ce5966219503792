package redislock_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// Locks on one Redis server. Not run: it needs a server.
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "redis.internal:6379",
		ContextTimeoutEnabled: true, // lockclient's calls carry deadlines
		DialTimeout:           time.Second,
		MaxRetries:            -1,
	})
	defer rdb.Close()
	locks := lockclient.New(redislock.New(rdb, redislock.WithPrefix("shop:")), lockclient.WithTTL(10*time.Second))
	defer locks.Close(ctx)

	lease, err := locks.Acquire(ctx, "account:42")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.WithoutCancel(ctx))
	log.Printf("token %d", lease.Token())
}
