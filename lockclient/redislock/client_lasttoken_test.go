package redislock_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// TestClientLastTokenNotBelowOwnGrant (red-team rt37c F5, G14 "LastToken bounds
// every token issued before the call"): the token counter goes back while a process
// runs (Redis restored from an older snapshot, a lagging replica promoted: "SET
// <prefix>token <older value>"). The process's Client holds a live lease with token T
// and knows it (it refuses a later grant of that name at or below T since rt28b F2),
// yet Client.LastToken — the FloorRaiser the application hands to
// fencedsql.WithTokenSource, and what an in-process health check or failover step
// raises the database floor from (LastToken+1) — answers the reset counter, below T.
// A floor raised from it does not refuse the Client's own live lease, nor any other
// lease granted before the reset; the FloorRaiser contract ("every token the service
// issued before the call is at most t") is broken although the Client has the proof.
//
// Right behaviour: Client.LastToken never answers below a token the Client itself was
// granted — it fails with an error wrapping ErrInvalidConfig (the source went back,
// raise the floor), as the Client's grants do; after the raise it answers again.
func TestClientLastTokenNotBelowOwnGrant(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 10*time.Second)
	b := n.backend("a")
	c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	// The counter goes back (restore / lagging replica promoted).
	if err := n.client("admin").Set(ctx, b.TokenKey(), strconv.FormatUint(l.Token()-1000, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	last, err := c.LastToken(ctx)
	if !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("Client.LastToken = %d, %v, with a lease of token %d held: want an error wrapping ErrInvalidConfig (the token source went back; "+
			"a database floor raised to %d would not refuse the lease)", last, err, l.Token(), last+1)
	}
	// Raising the service's floor above the Client's token is the fix.
	if err := c.RaiseFloor(ctx, l.Token()); err != nil {
		t.Fatal(err)
	}
	if last, err := c.LastToken(ctx); err != nil || last < l.Token() {
		t.Fatalf("Client.LastToken after the raise: %d, %v, want at least %d", last, err, l.Token())
	}
}

// TestClientRetireNotBelowOwnGrant (red-team rt38b F3): Client.Retire applies
// Client.LastToken's check. With the counter gone back below a lease the Client holds,
// it used to retire the service and answer the reset value — the switch raises the new
// service and the database floor from that answer, which would not refuse the lease.
// It now fails with ErrInvalidConfig and leaves the service unmarked; after the floor
// is raised above the lease, it retires and answers at least the lease's token.
func TestClientRetireNotBelowOwnGrant(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 10*time.Second)
	b := n.backend("a")
	c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	reset := strconv.FormatUint(l.Token()-1000, 10)
	if err := n.client("admin").Set(ctx, b.TokenKey(), reset, 0).Err(); err != nil {
		t.Fatal(err)
	}
	last, err := c.Retire(ctx)
	if !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrRetired) {
		t.Fatalf("Client.Retire = %d, %v with a lease of token %d held: want ErrInvalidConfig (not ErrRetired)", last, err, l.Token())
	}
	if v, _ := n.client("admin").Get(ctx, b.TokenKey()).Result(); v != reset {
		t.Fatalf("the refused Retire changed the counter to %q", v)
	}
	if err := c.RaiseFloor(ctx, l.Token()); err != nil {
		t.Fatal(err)
	}
	if last, err := c.Retire(ctx); err != nil || last < l.Token() {
		t.Fatalf("Client.Retire after the raise: %d, %v, want at least %d", last, err, l.Token())
	}
}
