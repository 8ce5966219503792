package etcdlock_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
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
