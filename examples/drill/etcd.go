package main

import (
	"context"

	"github.com/fencedsql/fencedsql/internal/etcdserver"
)

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
