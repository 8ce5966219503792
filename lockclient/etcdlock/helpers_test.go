package etcdlock_test

import (
	"context"
	"fmt"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
)

func TestMain(m *testing.M) { etcdtest.VerifyTestMain(m) }

// requestTimeout is short in tests so that a cut connection surfaces quickly.
const requestTimeout = 2 * time.Second

// testTTL is the lease TTL of the tests that require a lease to survive. etcd leases are
// whole seconds; 1s works on an idle machine, but a test process starved of CPU for
// ~400ms (a loaded CI box, -race) then rightly gives up a 1s lease (renewal every 333ms,
// safety margin 250ms). 2s leaves room for twice that.
const testTTL = 2 * time.Second

var prefixSeq atomic.Int64

// uniquePrefix returns a fresh etcd key prefix, so that tests sharing a server never see
// each other's locks.
func uniquePrefix(t testing.TB) string {
	return fmt.Sprintf("/test/%s/%d/", t.Name(), prefixSeq.Add(1))
}

// proxiedNS is a locktest.Namespace over one etcd endpoint: every owner gets its own
// etcd client dialing through its own loopback proxy, which the faults cut.
type proxiedNS struct {
	*netproxy.Group // the Faults: one proxy per owner
	t               testing.TB
	prefix          string
	reqTimeout      time.Duration
	opts            []etcdlock.Option // more options of every backend
	target          string            // etcd's client address, for Queued
	admin           *clientv3.Client  // bypasses the proxies; made by Queued
}

func newProxiedNS(t testing.TB, target string) *proxiedNS {
	g := netproxy.NewGroup(target)
	t.Cleanup(g.Close)
	return &proxiedNS{Group: g, t: t, prefix: uniquePrefix(t), reqTimeout: requestTimeout, target: target}
}

// client returns a new etcd client for owner through a new proxy.
func (n *proxiedNS) client(owner string) *clientv3.Client {
	n.t.Helper()
	p, err := n.Proxy(owner)
	if err != nil {
		n.t.Fatal(err)
	}
	return etcdtest.NewClient(n.t, p.Addr()) // closed before the proxies (cleanups run last-in first-out)
}

func (n *proxiedNS) backend(cli *clientv3.Client) lockclient.Backend {
	return etcdlock.New(cli, append([]etcdlock.Option{etcdlock.WithPrefix(n.prefix), etcdlock.WithRequestTimeout(n.reqTimeout)}, n.opts...)...)
}

// Backend implements locktest.Namespace.
func (n *proxiedNS) Backend(owner string) lockclient.Backend { return n.backend(n.client(owner)) }

// Queued implements locktest.QueueCounter: the waiters of a lock are its keys under the
// lock's prefix but the first (the holder's), see the package doc.
func (n *proxiedNS) Queued(ctx context.Context, key string) (int, error) {
	if n.admin == nil {
		n.admin = etcdtest.NewClient(n.t, n.target)
	}
	resp, err := n.admin.Get(ctx, n.prefix+url.PathEscape(key)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return max(int(resp.Count)-1, 0), nil
}

// Faults implements locktest.Namespace: both a pause and a partition stall the owner's
// connection (bytes wait in the proxy and are delivered late, after Resume or Heal).
func (n *proxiedNS) Faults() locktest.Faults { return n.Group }

// newClient returns a lockclient.Client named owner in namespace n, closed at the end of
// the test, with locktest-like timing for ttl.
func (n *proxiedNS) newClient(owner string, ttl time.Duration, opts ...lockclient.Option) *lockclient.Client {
	c := lockclient.New(n.Backend(owner), append([]lockclient.Option{
		lockclient.WithOwner(owner), lockclient.WithTTL(ttl),
		lockclient.WithSafetyMargin(ttl / 4), lockclient.WithRetry(5*time.Millisecond, 50*time.Millisecond),
	}, opts...)...)
	n.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Close(ctx)
	})
	return c
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// countingLease counts the keep-alive requests a client sends, and fails them on demand.
type countingLease struct {
	clientv3.Lease
	keepAlives atomic.Int64
	fail       atomic.Pointer[error] // when set, KeepAliveOnce fails with it without sending
}

func (c *countingLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	if err := c.fail.Load(); err != nil {
		return nil, *err
	}
	c.keepAlives.Add(1)
	return c.Lease.KeepAliveOnce(ctx, id)
}

// countKeepAlives makes cli count its KeepAliveOnce calls (the backend calls them through
// the client's embedded Lease).
func countKeepAlives(cli *clientv3.Client) *countingLease {
	cl := &countingLease{Lease: cli.Lease}
	cli.Lease = cl
	return cl
}

// lockKeys is the range option of every lock key under prefix and nothing else: the
// keys of the service (<prefix>~floor, <prefix>~service-id) sort after "~" − 1, lock
// keys (path-escaped names without a leading "~") before.
func lockKeys(prefix string) clientv3.OpOption { return clientv3.WithRange(prefix + "~") }
