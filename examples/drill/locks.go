package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// The lock services of -locks.
const (
	locksMem          = "mem"
	locksEtcd         = "etcd"
	locksEtcdEmbedded = "etcd-embedded"
	locksRedis        = "redis"
	locksSQL          = "sql"
)

var locksAliases = map[string]string{
	"mem": locksMem, "memlock": locksMem, "memory": locksMem,
	"etcd": locksEtcd, "etcdlock": locksEtcd,
	"etcd-embedded": locksEtcdEmbedded, "embedded-etcd": locksEtcdEmbedded,
	"redis": locksRedis, "redislock": locksRedis,
	"sql": locksSQL, "sqllock": locksSQL,
}

// defaultTTL is the lease TTL of a lock service when -ttl is not given. etcd lease TTLs
// are whole seconds, 1s at least (etcdlock rounds up); Redis and the SQL lease table
// judge expiry to the millisecond, but a round trip through the network and the proxy
// deserves a little more slack than the in-process service.
func defaultTTL(locks string) time.Duration {
	switch locks {
	case locksEtcd, locksEtcdEmbedded:
		return time.Second
	case locksRedis, locksSQL:
		return 500 * time.Millisecond
	}
	return 300 * time.Millisecond
}

// defaultRounds is the rounds per worker of a lock service when -rounds is not given:
// every fault stalls the other workers until the lease expires at the service, so a
// longer TTL gets fewer rounds, to keep a drill well under a minute.
func defaultRounds(locks string) int {
	switch locks {
	case locksEtcd, locksEtcdEmbedded:
		return 10
	}
	return 40
}

// serviceLag is how much longer than the TTL a lock service may keep a lease after its
// last renewal. A fault lasts 1.5 to 3 TTLs more than that, so that the lease really
// expires at the service and another worker takes the lock before the late write.
//
// etcdlock grants the session lease TTL + etcdlock.DefaultLeaseSlack, rounded up to
// whole seconds, and etcd's lessor looks for expired leases every 500ms; the others
// expire a lease TTL after its last renewal.
func (c *config) serviceLag() time.Duration {
	switch c.Locks {
	case locksEtcd, locksEtcdEmbedded:
		lease := (c.TTL + etcdlock.DefaultLeaseSlack + time.Second - 1).Truncate(time.Second)
		return lease - c.TTL + 500*time.Millisecond
	}
	return 0
}

// lockService is the lock service of one run.
type lockService interface {
	// worker connects worker w, named owner, to the service: the backend of its lock
	// client and the faults that cut it off. Call done.close after the lock client's
	// Close.
	worker(w int, owner string) (workerLocks, error)
	// lastToken returns the last fencing token the service issued, 0 if it cannot tell.
	lastToken() uint64
	// close frees the service's resources once every worker is done.
	close(ctx context.Context) error
}

// failoverService is a lock service that can lose its leader (etcd-embedded, 3 members).
type failoverService interface {
	// killLeader kills the current leader and returns its name.
	killLeader(ctx context.Context) (string, error)
	// waitLeader waits for a leader and returns its name.
	waitLeader(ctx context.Context) (string, error)
	// restart starts the killed member name again; it rejoins as a follower.
	restart(ctx context.Context, name string) error
}

// workerLocks is one worker's connection to the lock service.
type workerLocks struct {
	backend lockclient.Backend
	faults  faults
	close   func()
}

// faults cut one worker off from the lock service.
type faults interface {
	pause()     // hold its requests (renewals too), to be delivered late by resume
	resume()    // deliver them
	partition() // black-hole its requests
	heal()      // end the partition: requests still held are dropped
}

// openLocks starts (etcd-embedded) or connects to the lock service of one run named
// name: a fresh memlock, a fresh etcd cluster, or a run-specific key prefix or lease
// table on an external service.
func openLocks(ctx context.Context, cfg config, name string) (lockService, error) {
	switch cfg.Locks {
	case locksEtcd:
		eps, err := etcdEndpoints(cfg.LockEndpoints)
		if err != nil {
			return nil, err
		}
		return &etcdLocks{targets: eps, prefix: cfg.lockPrefix(name)}, nil
	case locksEtcdEmbedded:
		cluster, err := startEtcd(ctx, cfg.EtcdMembers)
		if err != nil {
			return nil, err
		}
		return &etcdLocks{targets: cluster.endpoints(), prefix: cfg.lockPrefix(name), cluster: cluster}, nil
	case locksRedis:
		return openRedisLocks(ctx, cfg, name)
	case locksSQL:
		return openSQLLocks(ctx, cfg, name)
	}
	if cfg.Procs > 0 {
		// memlock cannot be shared across processes: serve it to the worker processes.
		return startLockServer()
	}
	return memLocks{memlock.New()}, nil
}

// lockPrefix is the key prefix of run name's locks on etcd or Redis.
func (c *config) lockPrefix(name string) string {
	p := c.LockPrefix
	if p == "" {
		p = c.nonce
	}
	if c.Locks == locksRedis {
		return p + name + ":"
	}
	return p + name + "/"
}

// randomPrefix is the default -lock-prefix: one per drill, so that drills sharing a
// service never see each other's locks.
func randomPrefix(locks string) string {
	var b [6]byte
	_, _ = crand.Read(b[:])
	if locks == locksRedis {
		return "fencedsql-drill:" + hex.EncodeToString(b[:]) + ":"
	}
	return "/fencedsql-drill/" + hex.EncodeToString(b[:]) + "/"
}
