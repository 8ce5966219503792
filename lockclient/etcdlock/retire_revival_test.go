package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// A retired etcd service whose prefix is deleted (the retirement mark with it) on a
// cluster shared with other writers grants again, from the cluster's revision — below
// the bound Retire answered (lockclient.RetirementMargin), so below the new service,
// raised to that bound, and below the database floor raised from it. A failover hook
// still pointed at it (LastToken, AdvanceFloor with the default margin) answers below
// the bound too, so it cannot raise the database floor above the new service's tokens
// (red-team rt44c F2).
func TestRetiredServiceRevivedByPrefixDeleteStaysBelowItsRetirement(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartSingle(t)
	cli := etcdtest.NewClient(t, c.Members[0].ClientAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := uniquePrefix(t)
	old := etcdlock.New(cli, etcdlock.WithPrefix(prefix))
	oc := lockclient.New(old, lockclient.WithTTL(5*time.Second), lockclient.WithOwner("old"))
	l, err := oc.Acquire(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	_ = oc.Close(ctx)
	last, err := old.Retire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last < l.Token()+lockclient.RetirementMargin {
		t.Fatalf("Retire answered %d, want at least the last token %d plus the margin %d", last, l.Token(), lockclient.RetirementMargin)
	}
	if got, retired, err := old.Retired(ctx); err != nil || !retired || got != last {
		t.Fatalf("Retired = %d, %v, %v; want %d, true", got, retired, err, last)
	}
	for i := 0; i < 50; i++ { // other writers of the shared cluster
		if _, err := cli.Put(ctx, fmt.Sprintf("%sother/%d", prefix[:len(prefix)-1]+"-x/", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	straggler := etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix))
	sc := lockclient.New(straggler, lockclient.WithTTL(5*time.Second), lockclient.WithOwner("straggler"))
	defer func() { _ = sc.Close(ctx) }()
	sl, err := sc.Acquire(ctx, "acct")
	switch {
	case errors.Is(err, lockclient.ErrRetired):
	case err != nil:
		t.Fatal(err)
	default:
		defer func() { _ = sl.Release(ctx) }()
		if sl.Token() > last {
			t.Fatalf("the revived service granted %d, above its retirement's bound %d (the new service's floor)", sl.Token(), last)
		}
	}
	hook, err := lockclient.AdvanceFloor(ctx, straggler, lockclient.DefaultFailoverMargin)
	if err != nil {
		t.Fatal(err)
	}
	if hook > last {
		t.Fatalf("a failover hook pointed at the revived service answers %d, above the retirement's bound %d: it would raise the database floor above the new service's tokens", hook, last)
	}
}
