package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencedsql/fencedsql/internal/etcdserver"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// etcdRequestTimeout bounds each etcd request of the workers' backends
// (etcdlock.WithRequestTimeout), so that a request through a cut proxy fails in time.
const etcdRequestTimeout = 2 * time.Second

// etcdLocks is an etcd cluster: external (-locks etcd) or embedded in the process.
type etcdLocks struct {
	targets []string     // client host:port of every member
	prefix  string       // key prefix of this run's locks
	cluster *etcdCluster // etcd-embedded; nil for an external cluster
}

// etcdEndpoints parses -lock-endpoints for etcd: comma-separated http:// client URLs or
// host:port addresses.
func etcdEndpoints(s string) ([]string, error) {
	var eps []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if strings.Contains(e, "://") {
			u, err := url.Parse(e)
			switch {
			case err != nil:
				return nil, fmt.Errorf("-lock-endpoints %q: %w", e, err)
			case u.Scheme != "http":
				return nil, fmt.Errorf("-lock-endpoints %q: only plain http:// etcd endpoints (the drill puts a TCP proxy in front of each and does not speak TLS)", e)
			}
			e = u.Host
		}
		if _, _, err := net.SplitHostPort(e); err != nil {
			return nil, fmt.Errorf("-lock-endpoints %q: want host:port or http://host:port", e)
		}
		eps = append(eps, e)
	}
	if len(eps) == 0 {
		return nil, errors.New("-locks etcd needs -lock-endpoints (comma-separated client URLs)")
	}
	return eps, nil
}

func (e *etcdLocks) worker(_ int, _ string) (workerLocks, error) {
	ps, err := newProxies(e.targets)
	if err != nil {
		return workerLocks{}, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   ps.addrs(),
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		ps.close()
		return workerLocks{}, fmt.Errorf("etcd client: %w", err)
	}
	backend := etcdlock.New(cli, etcdlock.WithPrefix(e.prefix), etcdlock.WithRequestTimeout(etcdRequestTimeout))
	return workerLocks{backend: backend, faults: ps, close: func() {
		cli.Close()
		ps.close()
	}}, nil
}

func (e *etcdLocks) lastToken() uint64 { return 0 }

func (e *etcdLocks) close(context.Context) error {
	if e.cluster != nil {
		e.cluster.close()
	}
	return nil
}

func (e *etcdLocks) killLeader(ctx context.Context) (string, error) {
	if e.cluster == nil || len(e.cluster.Members) < 3 {
		return "", errors.New("failover needs an embedded etcd cluster of 3 or more members")
	}
	i, err := e.cluster.waitLeader(ctx)
	if err != nil {
		return "", err
	}
	e.cluster.kill(i)
	return e.cluster.Members[i].Name, nil
}

func (e *etcdLocks) restart(ctx context.Context, name string) error {
	for i, m := range e.cluster.Members {
		if m.Name == name {
			return e.cluster.Restart(ctx, i)
		}
	}
	return fmt.Errorf("no etcd member %q", name)
}

func (e *etcdLocks) waitLeader(ctx context.Context) (string, error) {
	i, err := e.cluster.waitLeader(ctx)
	if err != nil {
		return "", err
	}
	return e.cluster.Members[i].Name, nil
}

// etcdCluster is an etcd cluster run inside the drill's process (-locks etcd-embedded):
// real etcd servers on loopback ports with their data in a temporary directory, from
// internal/etcdserver (the same servers the tests use: a killed leader is replaced in
// about a second, and the minimum lease TTL is 1s).
type etcdCluster struct{ *etcdserver.Cluster }

// startEtcd starts an n-member cluster and waits until it has a leader.
func startEtcd(ctx context.Context, n int) (*etcdCluster, error) {
	c, err := etcdserver.Start(ctx, etcdserver.Options{Members: n})
	if err != nil {
		return nil, err
	}
	return &etcdCluster{c}, nil
}

// endpoints returns the client addresses (host:port) of every member, stopped or not.
func (c *etcdCluster) endpoints() []string { return c.AllEndpoints() }

// waitLeader waits until the running members agree on a running leader.
func (c *etcdCluster) waitLeader(ctx context.Context) (int, error) { return c.WaitLeader(ctx) }

// kill stops member i abruptly, like a crashed process.
func (c *etcdCluster) kill(i int) { c.Kill(i) }

// close stops every member and removes the data directory.
func (c *etcdCluster) close() { c.Close() }
