package redislock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// TestRetireOnWritableReplicaWithoutINFORefused (red-team rt38b F2, G14 "a service
// switched away from is retired"): Retire through a writable replica (replica-read-only
// no) with an account that may not run INFO passes the PERSIST check and used to take
// the refused INFO for "primary": it marked only the replica's copy, printed a last
// token and reported success while the primary kept granting. Retire now requires the
// role positively read (INFO, or else ROLE): here ROLE answers "slave", so Retire fails
// with ErrUnavailable and the primary's counter is not marked.
func TestRetireOnWritableReplicaWithoutINFORefused(t *testing.T) {
	primary := ownRedis(t, "--repl-diskless-sync-delay", "0")
	replica := ownRedis(t, "--replicaof", "127.0.0.1", portOf(t, primary), "--replica-read-only", "no")
	ctx := ctxT(t, 20*time.Second)
	p := newClient(t, primary)
	admin := newClient(t, replica)
	if err := admin.Do(ctx, "ACL", "SETUSER", "op", "on", ">pw", "~*", "&*", "+@all", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	r := newClient(t, replica)
	if err := r.Do(ctx, "AUTH", "op", "pw").Err(); err != nil {
		t.Fatal(err)
	}
	const prefix = "retire-wr:"
	bp := redislock.New(p, redislock.WithPrefix(prefix))
	br := redislock.New(r, redislock.WithPrefix(prefix))
	c := lockclient.New(bp, lockclient.WithTTL(5*time.Second))
	defer c.Close(context.Background())
	l1, err := c.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	_ = l1.Release(ctx)
	for { // the replica has the counter
		v, err := admin.Get(ctx, bp.TokenKey()).Uint64()
		if err == nil && v == l1.Token() {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("replica never synced: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	last, err := br.Retire(ctx) // lockfloor -backend redis -addr <replica> -retire
	if !errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("Retire through a writable replica (account without INFO) = %d, %v: want ErrUnavailable (it retires nothing)", last, err)
	}
	if v, _ := admin.Get(ctx, bp.TokenKey()).Result(); strings.HasPrefix(v, "retired:") {
		t.Fatalf("the refused Retire marked the replica's counter: %q", v)
	}
}

// TestRetireWithoutINFOChecksROLE (red-team rt38b F2): on the primary, an account that
// may not run INFO but may run ROLE retires (ROLE answers "master"); one that may run
// neither is refused with ErrUnavailable naming the ACL grants that fix it, and the
// counter is left unmarked.
func TestRetireWithoutINFOChecksROLE(t *testing.T) {
	primary := ownRedis(t)
	ctx := ctxT(t, 20*time.Second)
	admin := newClient(t, primary)
	for _, u := range [][]any{
		{"ACL", "SETUSER", "norole", "on", ">pw", "~*", "&*", "+@all", "-info", "-role"},
		{"ACL", "SETUSER", "roleonly", "on", ">pw", "~*", "&*", "+@all", "-info"},
	} {
		if err := admin.Do(ctx, u...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string) *redislock.Backend {
		c := newClient(t, primary)
		if err := c.Do(ctx, "AUTH", user, "pw").Err(); err != nil {
			t.Fatal(err)
		}
		return redislock.New(c, redislock.WithPrefix("retire-role:"))
	}
	b := as("norole")
	if err := b.RaiseFloor(ctx, 100); err != nil { // RaiseFloor keeps the lenient check (seeds the counter)
		t.Fatal(err)
	}
	before, err := admin.Get(ctx, b.TokenKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Retire(ctx)
	if !errors.Is(err, lockclient.ErrUnavailable) || !strings.Contains(err.Error(), "+info") || !strings.Contains(err.Error(), "+role") {
		t.Fatalf("Retire with an account that may run neither INFO nor ROLE: %v, want ErrUnavailable naming +info and +role", err)
	}
	if v, _ := admin.Get(ctx, b.TokenKey()).Result(); v != before {
		t.Fatalf("the refused Retire changed the counter: %q", v)
	}
	last, err := as("roleonly").Retire(ctx)
	counter, _ := strconv.ParseUint(before, 10, 64)
	if err != nil || last < counter+lockclient.RetirementMargin {
		t.Fatalf("Retire on the primary with ROLE allowed: %d, %v, want at least %s + the retirement margin", last, err, before)
	}
	if v, _ := admin.Get(ctx, b.TokenKey()).Result(); v != "retired:"+strconv.FormatUint(last, 10) {
		t.Fatalf("counter after Retire: %q, want retired:%d", v, last)
	}
}

// TestFloorOnWritableReplicaWithoutINFOReadsROLE (a known-open finding of rt38b): on a
// writable replica (replica-read-only no), an account that may not run INFO passed the
// PERSIST check, and LastToken answered the replica's counter — which may lag tokens
// the primary granted: a floor raised from it lets them write again — and RaiseFloor
// raised only the replica's copy. Both now read ROLE where INFO is refused, and refuse
// the replica (ErrUnavailable), leaving its counter alone; where the account may run
// neither they stay lenient (WithMinToken runs at every Open), which
// TestRetireWithoutINFOChecksROLE covers on a primary.
func TestFloorOnWritableReplicaWithoutINFOReadsROLE(t *testing.T) {
	primary := ownRedis(t, "--repl-diskless-sync-delay", "0")
	replica := ownRedis(t, "--replicaof", "127.0.0.1", portOf(t, primary), "--replica-read-only", "no")
	ctx := ctxT(t, 20*time.Second)
	p := newClient(t, primary)
	admin := newClient(t, replica)
	if err := admin.Do(ctx, "ACL", "SETUSER", "op", "on", ">pw", "~*", "&*", "+@all", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	r := newClient(t, replica)
	if err := r.Do(ctx, "AUTH", "op", "pw").Err(); err != nil {
		t.Fatal(err)
	}
	const prefix = "floor-wr:"
	bp := redislock.New(p, redislock.WithPrefix(prefix))
	br := redislock.New(r, redislock.WithPrefix(prefix))
	if err := bp.RaiseFloor(ctx, 500); err != nil { // a missing counter is seeded from the clock
		t.Fatal(err)
	}
	want, err := p.Get(ctx, bp.TokenKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for { // the replica has the counter
		v, err := admin.Get(ctx, bp.TokenKey()).Result()
		if err == nil && v == want {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("replica never synced: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last, err := br.LastToken(ctx); !errors.Is(err, lockclient.ErrUnavailable) {
		t.Errorf("LastToken through a writable replica (account without INFO) = %d, %v: want ErrUnavailable", last, err)
	}
	n, _ := strconv.ParseUint(want, 10, 64)
	if err := br.RaiseFloor(ctx, n+1000); !errors.Is(err, lockclient.ErrUnavailable) {
		t.Errorf("RaiseFloor through a writable replica (account without INFO) = %v: want ErrUnavailable", err)
	}
	if v, _ := admin.Get(ctx, bp.TokenKey()).Result(); v != want {
		t.Errorf("the replica's counter after the refused raise: %q, want %s", v, want)
	}
}
