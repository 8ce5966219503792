package etcdlock_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
)

// Two Backends on one cluster and prefix, each over its own etcd client (as two
// processes), share an identity; another prefix, or another cluster with the same
// prefix, is another service (red-team rt42e F2).
func TestServiceIdentity(t *testing.T) {
	t.Parallel()
	one := etcdtest.StartSingle(t)
	two := etcdtest.StartSingle(t)
	prefix := uniquePrefix(t)
	backend := func(c *etcdtest.Cluster, prefix string) lockclient.Backend {
		return etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix))
	}
	locktest.ServiceIdentity(t, []lockclient.Backend{backend(one, prefix), backend(one, prefix)},
		backend(one, uniquePrefix(t)), backend(two, prefix))
}

// startDefaultConfiguredEtcd starts a single-member etcd bootstrapped the way two
// deployments of one configuration are (same member name, same advertised peer URL, same
// --initial-cluster-token: etcd's defaults are "default", http://localhost:2380 and
// "etcd-cluster"), listening on its own loopback ports, with its own data directory.
// It returns the client address.
func startDefaultConfiguredEtcd(t *testing.T) string {
	t.Helper()
	peerPort, clientPort := testdb.FreePort(t), testdb.FreePort(t)
	cfg := embed.NewConfig()
	cfg.Name = "default"
	cfg.Dir = t.TempDir()
	adv := url.URL{Scheme: "http", Host: "localhost:2380"}
	cfg.ListenPeerUrls = []url.URL{{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}}
	cfg.AdvertisePeerUrls = []url.URL{adv}
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.InitialCluster = "default=" + adv.String()
	cfg.InitialClusterToken = "etcd-cluster"
	cfg.TickMs = 50
	cfg.ElectionMs = 500
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready")
	}
	return client.Host
}

// Two etcd clusters bootstrapped from one configuration have one cluster id (etcd
// derives it from the member names, advertised peer URLs and cluster token), but they
// are two token counters: their identities differ, by the value each stores under the
// prefix (red-team rt44c F1).
func TestServiceIdentityOfClustersOfOneConfiguration(t *testing.T) {
	one, two := startDefaultConfiguredEtcd(t), startDefaultConfiguredEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	for i, addr := range []string{one, two} {
		b := etcdlock.New(etcdtest.NewClient(t, addr), etcdlock.WithPrefix("same/"))
		c := lockclient.New(b, lockclient.WithTTL(5*time.Second), lockclient.WithOwner(fmt.Sprintf("cluster-%d", i)))
		defer func() { _ = c.Close(ctx) }()
		l, err := c.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Release(ctx) }()
		ids = append(ids, l.ServiceID())
	}
	if ids[0] == "" || ids[0] == ids[1] {
		t.Fatalf("two etcd clusters of one configuration answer identities %q: one lock service to fencedsql", ids)
	}
}

// The random part of the identity lives under the prefix: every Backend of the prefix
// reads the stored value; after the prefix is wiped, a Backend opened later draws a new
// one (another lineage of tokens), while one already open keeps its cached identity.
func TestServiceIdentityStoredUnderPrefix(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartSingle(t)
	cli := etcdtest.NewClient(t, c.Members[0].ClientAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := uniquePrefix(t)
	id := func(b *etcdlock.Backend) string {
		s, err := b.Open(ctx, "o", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close(ctx) }()
		return s.(lockclient.ServiceIdentifier).ServiceID()
	}
	first := etcdlock.New(cli, etcdlock.WithPrefix(prefix))
	a, b := id(first), id(etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix)))
	if a == "" || a != b {
		t.Fatalf("two Backends of one prefix answer %q and %q", a, b)
	}
	resp, err := cli.Get(ctx, first.ServiceIDKey())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("service identity key %s: %v, %v", first.ServiceIDKey(), resp, err)
	}
	if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if again := id(first); again != a {
		t.Fatalf("an open Backend's identity changed from %q to %q", a, again)
	}
	if fresh := id(etcdlock.New(cli, etcdlock.WithPrefix(prefix))); fresh == a || fresh == "" {
		t.Fatalf("a Backend opened after the prefix was wiped answers %q, the wiped service's %q", fresh, a)
	}
}
