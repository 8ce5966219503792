package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// ownRedis starts a redis-server of the test's own on a free loopback port (no
// persistence), extra arguments appended, and kills it at cleanup.
func ownRedis(t *testing.T, extra ...string) string {
	t.Helper()
	bin := testdb.RedisServerBin(t)
	port := testdb.FreePort(t)
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--maxmemory-policy", "noeviction"}, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return addr
		}
		if i > 100 {
			t.Fatalf("redis-server on %s did not start: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLastTokenOnReplicaRefused (red-team rt37c F2, G14 "LastToken is read from a
// primary only"): redislock's LastToken — what `lockfloor -backend redis -show` prints
// and what the failover hook (deploy/failover/raise-floor.sh) raises the guarded
// database's floor from — answers from a Redis replica. A replica's counter lags the
// primary's (asynchronous replication; here a replica whose link is down, as after its
// primary became unreachable), so LastToken returns a number BELOW tokens the primary
// has already granted: a database floor raised to LastToken+1 then lets those leases
// write (fail-open). sqllock refuses exactly this since rt31b (LastToken on a
// PostgreSQL standby or a MySQL replica fails with ErrUnavailable, `failover:
// TestSQLLockLastTokenOnReplica`); redislock reads GET from whatever server -addr
// names (a Sentinel-managed replica, a managed service's reader endpoint).
//
// Right behaviour: LastToken (and RaiseFloor) on a server whose ROLE is not master
// fails with an error wrapping lockclient.ErrUnavailable ("read LastToken from the
// primary"), never a number below a token the primary granted.
func TestLastTokenOnReplicaRefused(t *testing.T) {
	primary := ownRedis(t, "--repl-diskless-sync-delay", "0")
	replica := ownRedis(t, "--replicaof", "127.0.0.1", portOf(t, primary))
	ctx := ctxT(t, 20*time.Second)
	p, r := newClient(t, primary), newClient(t, replica)
	const prefix = "replica-test:"
	bp := redislock.New(p, redislock.WithPrefix(prefix))
	br := redislock.New(r, redislock.WithPrefix(prefix))
	c := lockclient.New(bp, lockclient.WithTTL(5*time.Second))
	defer c.Close(context.Background())

	l1, err := c.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	_ = l1.Release(ctx)
	// Wait until the replica has the counter.
	for {
		v, err := r.Get(ctx, bp.TokenKey()).Result()
		if err == nil && v == strconv.FormatUint(l1.Token(), 10) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the replica never got the counter: %v %q", err, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The replica loses its link (its primary unreachable from it): it stays a replica
	// and keeps serving its data.
	if err := r.Do(ctx, "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
		t.Fatal(err)
	}
	// The primary goes on granting.
	l2, err := c.Acquire(ctx, "account:2")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(context.Background())

	if err := br.RaiseFloor(ctx, l2.Token()+1000); !errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("RaiseFloor on a replica: %v, want an error wrapping ErrUnavailable", err)
	}
	if last, err := br.Retire(ctx); !errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("Retire on a replica: %d, %v, want an error wrapping ErrUnavailable", last, err)
	}
	if last, err := bp.LastToken(ctx); err != nil || last < l2.Token() {
		t.Fatalf("LastToken on the primary: %d, %v, want at least %d", last, err, l2.Token())
	}
	last, err := br.LastToken(ctx) // lockfloor -backend redis -addr <replica> -show
	switch {
	case err != nil && errors.Is(err, lockclient.ErrUnavailable):
		return // refused: right
	case err != nil:
		t.Fatalf("LastToken on a replica: %v, want an error wrapping ErrUnavailable", err)
	case last < l2.Token():
		t.Fatalf("LastToken on a Redis replica answered %d, below token %d the primary already granted (a live lease): "+
			"a database floor raised to %d lets that lease write; want ErrUnavailable (read LastToken from the primary)",
			last, l2.Token(), last+1)
	}
}

func portOf(t *testing.T, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}
