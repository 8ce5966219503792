package redislock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// TestRetiredReadsOnly (red-team rt42c F6): Retired — what lockfloor -show -live asks
// before the failover hook raises the database's floor — writes nothing: a missing
// counter is not seeded (it is no retirement) and a counter's expiry is left alone (no
// PERSIST); on a replica, whose counter may lag a retirement, it fails with an error
// wrapping lockclient.ErrUnavailable, as LastToken does. A retired counter answers its
// last token.
func TestRetiredReadsOnly(t *testing.T) {
	primary := ownRedis(t, "--repl-diskless-sync-delay", "0")
	replica := ownRedis(t, "--replicaof", "127.0.0.1", portOf(t, primary))
	ctx := ctxT(t, 20*time.Second)
	p := newClient(t, primary)
	b := redislock.New(p, redislock.WithPrefix("retired-test:"))

	if last, retired, err := b.Retired(ctx); err != nil || retired || last != 0 {
		t.Fatalf("Retired on a new service = %d, %v, %v; want 0, false, nil", last, retired, err)
	}
	if n, err := p.Exists(ctx, b.TokenKey()).Result(); err != nil || n != 0 {
		t.Fatalf("Retired created the token counter (exists %d, %v): it must write nothing", n, err)
	}
	if err := p.Set(ctx, b.TokenKey(), "41", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if _, retired, err := b.Retired(ctx); err != nil || retired {
		t.Fatalf("Retired on a counter holding a token = %v, %v; want false, nil", retired, err)
	}
	if ttl, err := p.TTL(ctx, b.TokenKey()).Result(); err != nil || ttl <= 0 {
		t.Fatalf("Retired changed the counter's expiry (TTL %v, %v): it must write nothing", ttl, err)
	}
	if err := p.Persist(ctx, b.TokenKey()).Err(); err != nil {
		t.Fatal(err)
	}
	last, err := b.Retire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, retired, err := b.Retired(ctx); err != nil || !retired || got != last {
		t.Fatalf("Retired after Retire = %d, %v, %v; want %d, true, nil", got, retired, err, last)
	}

	br := redislock.New(newClient(t, replica), redislock.WithPrefix("retired-test:"))
	if last, retired, err := br.Retired(ctx); !errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("Retired on a replica = %d, %v, %v; want an error wrapping ErrUnavailable", last, retired, err)
	}
}
