package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// writableReplica starts a primary and a replica of it that accepts writes
// (replica-read-only no: a Sentinel-demoted old primary that kept the setting), waits
// until the replica has synced, and returns a client of each plus an admin client of
// the replica. With acl (ACL SETUSER rules), the replica's client logs in as a user
// "op" with those rules.
func writableReplica(t *testing.T, ctx context.Context, acl ...string) (p, r, admin *redis.Client) {
	t.Helper()
	primary := ownRedis(t, "--repl-diskless-sync-delay", "0")
	replica := ownRedis(t, "--replicaof", "127.0.0.1", portOf(t, primary), "--replica-read-only", "no")
	p, r, admin = newClient(t, primary), newClient(t, replica), newClient(t, replica)
	if len(acl) > 0 {
		args := []any{"ACL", "SETUSER", "op", "on", ">pw"}
		for _, a := range acl {
			args = append(args, a)
		}
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := r.Do(ctx, "AUTH", "op", "pw").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Set(ctx, "replica-synced", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for admin.Exists(ctx, "replica-synced").Val() != 1 {
		if ctx.Err() != nil {
			t.Fatal("the replica never synced")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p, r, admin
}

// TestGrantThroughWritableReplicaRefused (red-team rt48d F1): a Backend whose address
// is a writable replica drew its token from the replica's copy of the counter and set
// the replica's copy of the lock: the primary, which saw neither, then granted the same
// lock with the same token to another holder. The grant script now starts with the
// primary check the floor scripts run (primaryLua): TryAcquire and Acquire through the
// replica fail with ErrUnavailable and write nothing there — with an account that may
// run INFO (checked inside the script) and with one that may only run ROLE (read
// before the script) — and the primary's grant is the only one.
func TestGrantThroughWritableReplicaRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		acl  []string
	}{
		{"INFO", nil},
		{"ROLE-without-INFO", []string{"~*", "&*", "+@all", "-info"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			p, r, admin := writableReplica(t, ctx, tc.acl...)
			const prefix = "replica-grant:"
			bp := redislock.New(p, redislock.WithPrefix(prefix))
			cp := lockclient.New(bp, lockclient.WithTTL(5*time.Second))
			defer cp.Close(context.Background())
			cr := lockclient.New(redislock.New(r, redislock.WithPrefix(prefix)), lockclient.WithTTL(5*time.Second))
			defer cr.Close(context.Background())
			l1, err := cp.Acquire(ctx, "account:1")
			if err != nil {
				t.Fatal(err)
			}
			_ = l1.Release(ctx)
			for admin.Exists(ctx, bp.LockKey("account:1")).Val() != 0 || admin.Get(ctx, bp.TokenKey()).Val() == "" {
				if ctx.Err() != nil {
					t.Fatal("the replica never got the release")
				}
				time.Sleep(20 * time.Millisecond)
			}
			counter := admin.Get(ctx, bp.TokenKey()).Val()

			if l, err := cr.TryAcquire(ctx, "account:1"); !errors.Is(err, lockclient.ErrUnavailable) {
				if err == nil {
					t.Fatalf("TryAcquire through a writable replica granted token %d (the primary's last: %d); want ErrUnavailable", l.Token(), l1.Token())
				}
				t.Fatalf("TryAcquire through a writable replica = %v; want ErrUnavailable", err)
			}
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			l, err := cr.Acquire(short, "account:1")
			cancel()
			if err == nil {
				t.Fatalf("Acquire through a writable replica granted token %d; want a refusal", l.Token())
			}
			if v := admin.Get(ctx, bp.TokenKey()).Val(); v != counter {
				t.Errorf("the replica's counter went from %s to %s: a refused grant drew a token there", counter, v)
			}
			if n := admin.Exists(ctx, bp.LockKey("account:1"), bp.QueueKey("account:1")).Val(); n != 0 {
				t.Errorf("a refused grant left %d lock or queue keys on the replica", n)
			}
			l2, err := cp.TryAcquire(ctx, "account:1")
			if err != nil {
				t.Fatalf("the primary's grant after the refusals: %v", err)
			}
			if l2.Token() <= l1.Token() {
				t.Fatalf("the primary's grant after the refusals: token %d; want above %d", l2.Token(), l1.Token())
			}
			_ = l2.Release(ctx)
		})
	}
}

// TestRenewAndReleaseThroughWritableReplicaRefused (red-team rt48d F1, the renewal and
// the release): a lease whose key lives on a writable replica — the replica's copy of a
// grant — was renewed there, kept alive on a copy the primary never sees, and released
// there. Renew and Release through a replica now fail with ErrUnavailable and leave the
// key as it was, so a lease held through a replica is lost at its deadline.
func TestRenewAndReleaseThroughWritableReplicaRefused(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	_, r, admin := writableReplica(t, ctx)
	br := redislock.New(r, redislock.WithPrefix("replica-renew:"))
	const value = "0011:2233:7:owner" // <session>:<request>:<token>:<owner>
	if err := admin.Set(ctx, br.LockKey("k"), value, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	s := locktest.OpenSession(t, br, "owner", time.Hour)
	g := lockclient.Grant{Key: "k", Token: 7, Data: value}
	if err := s.Renew(ctx, g); !errors.Is(err, lockclient.ErrUnavailable) {
		t.Errorf("Renew through a writable replica = %v; want ErrUnavailable", err)
	}
	if err := s.Release(ctx, g); !errors.Is(err, lockclient.ErrUnavailable) {
		t.Errorf("Release through a writable replica = %v; want ErrUnavailable", err)
	}
	if v, ttl := admin.Get(ctx, br.LockKey("k")).Val(), admin.PTTL(ctx, br.LockKey("k")).Val(); v != value || ttl > time.Minute {
		t.Errorf("the replica's key after the refusals: %q, ttl %v; want it unchanged (%q, at most a minute)", v, ttl, value)
	}
}
