package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// -raise N on etcd records N itself as the offset, so every later token is above N
// whatever the revision: the same -raise repeated after the prefix lost its data (the
// raise of a switch, re-run in the recovery) prices the next grants above every token
// granted before the loss, by a process without WithMinToken as by one opened
// WithMinToken(N) before the loss. Before, it recorded N minus the revision, and the
// repeat priced them below (red-team rt46d F1).
func TestRaiseEtcdRepeatedAfterPrefixLoss(t *testing.T) {
	cluster := etcdtest.StartSingle(t)
	cli := cluster.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := "/lockfloor-rt46d/" + strconv.FormatInt(time.Now().UnixNano(), 10) + "/"
	args := []string{"-backend", "etcd", "-endpoints", strings.Join(cluster.Endpoints(), ","), "-prefix", prefix}
	const n = uint64(1) << 50
	raise := append(append([]string{}, args...), "-raise", strconv.FormatUint(n, 10))
	if got := number(t, raise...); got <= n {
		t.Fatalf("-raise %d printed %d", n, got)
	}
	bare := lockclient.New(etcdlock.New(cluster.Client(t), etcdlock.WithPrefix(prefix)), lockclient.WithTTL(10*time.Second), lockclient.WithOwner("bare"))
	defer bare.Close(context.Background())
	configured := lockclient.New(etcdlock.New(cluster.Client(t), etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(n)),
		lockclient.WithTTL(10*time.Second), lockclient.WithOwner("configured"))
	defer configured.Close(context.Background())
	var high uint64
	for i, c := range []*lockclient.Client{bare, configured, bare, configured, bare} {
		l, err := c.Acquire(ctx, "k"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		high = max(high, l.Token())
	}
	if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	number(t, raise...)
	for _, c := range []*lockclient.Client{bare, configured} {
		l, err := c.Acquire(ctx, "after-"+c.Owner())
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= high {
			t.Fatalf("%s was granted %d after the loss and -raise %d again, not above %d granted before", c.Owner(), l.Token(), n, high)
		}
	}
}
