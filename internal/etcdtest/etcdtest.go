// Package etcdtest runs real etcd servers in-process for tests (internal/etcdserver): a
// single node or a three-node cluster on loopback, with data in the test's temporary
// directory, quiet logs, a way to kill the leader, and clients closed with the test.
package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdserver"
)

// Options configures a cluster.
type Options = etcdserver.Options

// Member is one etcd server of a Cluster.
type Member = etcdserver.Member

// Cluster is a running etcd cluster; Start registers its shutdown with t.Cleanup.
type Cluster struct {
	*etcdserver.Cluster
	tb testing.TB
}

// StartSingle starts a one-node etcd.
func StartSingle(tb testing.TB) *Cluster { return Start(tb, Options{Members: 1}) }

// StartThree starts a three-node etcd cluster.
func StartThree(tb testing.TB) *Cluster { return Start(tb, Options{Members: 3}) }

// Start starts a cluster with its data in the test's temporary directory and waits until
// it has a leader; it is stopped when the test ends.
func Start(tb testing.TB, o Options) *Cluster {
	tb.Helper()
	if o.Dir == "" {
		o.Dir = tb.TempDir()
	}
	c, err := etcdserver.Start(context.Background(), o)
	if err != nil {
		tb.Fatalf("etcdtest: %v", err)
	}
	tb.Cleanup(c.Close)
	return &Cluster{Cluster: c, tb: tb}
}

// WaitLeader waits until the running members agree on a running leader.
func (c *Cluster) WaitLeader(timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.Cluster.WaitLeader(ctx)
}

// KillLeader kills the current leader (waiting for one first) and returns its index.
func (c *Cluster) KillLeader() int {
	c.tb.Helper()
	i, err := c.WaitLeader(30 * time.Second)
	if err != nil {
		c.tb.Fatalf("etcdtest: %v", err)
	}
	c.Kill(i)
	return i
}

// ClientConfig is a quiet client configuration for endpoints with short timeouts, so
// that a cut connection surfaces quickly as an error rather than a hang.
func ClientConfig(endpoints ...string) clientv3.Config {
	return etcdserver.ClientConfig(endpoints...)
}

// Client returns a client of the given endpoints (default: every running member), closed
// when the test ends.
func (c *Cluster) Client(tb testing.TB, endpoints ...string) *clientv3.Client {
	tb.Helper()
	if len(endpoints) == 0 {
		endpoints = c.Endpoints()
	}
	return NewClient(tb, endpoints...)
}

// NewClient returns a quiet client of endpoints, closed when the test ends.
func NewClient(tb testing.TB, endpoints ...string) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(ClientConfig(endpoints...))
	if err != nil {
		tb.Fatalf("etcdtest: client of %v: %v", endpoints, err)
	}
	tb.Cleanup(func() { cli.Close() })
	return cli
}
