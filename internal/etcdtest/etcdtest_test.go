package etcdtest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
)

func TestMain(m *testing.M) { etcdtest.VerifyTestMain(m) }

func TestSingle(t *testing.T) {
	c := etcdtest.StartSingle(t)
	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("Get = %v, %v", resp, err)
	}
	// The short election timeout makes 1s the server's minimum lease TTL.
	g, err := cli.Grant(ctx, 1)
	if err != nil || g.TTL != 1 {
		t.Fatalf("Grant(1) = %+v, %v; want TTL 1", g, err)
	}
}

func TestKillLeader(t *testing.T) {
	c := etcdtest.StartThree(t)
	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "1"); err != nil {
		t.Fatal(err)
	}
	old := c.KillLeader()
	start := time.Now()
	lead, err := c.WaitLeader(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if lead == old {
		t.Fatalf("leader still %d after it was killed", lead)
	}
	t.Logf("new leader m%d after %v", lead, time.Since(start))
	if len(c.Endpoints()) != 2 {
		t.Fatalf("endpoints %v, want 2", c.Endpoints())
	}
	if _, err := cli.Put(ctx, "k", "2"); err != nil {
		t.Fatalf("Put after failover: %v", err)
	}
}

// TestRepeatedFailovers: a killed member restarted from its data directory rejoins, so a
// 3-member cluster survives one leader kill after another; writes made while it was down
// reach it.
func TestRepeatedFailovers(t *testing.T) {
	c := etcdtest.StartThree(t)
	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for round := range 3 {
		old := c.KillLeader()
		lead, err := c.WaitLeader(10 * time.Second)
		if err != nil || lead == old {
			t.Fatalf("round %d: leader %d after killing %d: %v", round, lead, old, err)
		}
		val := fmt.Sprint(round)
		if _, err := cli.Put(ctx, "k", val); err != nil {
			t.Fatalf("round %d: Put with %s down: %v", round, c.Members[old].Name, err)
		}
		if err := c.Restart(ctx, old); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := c.Restart(ctx, old); err == nil {
			t.Fatalf("round %d: restarting a running member succeeded", round)
		}
		if len(c.Endpoints()) != 3 {
			t.Fatalf("round %d: endpoints %v after the restart, want 3", round, c.Endpoints())
		}
		// The restarted member serves the write it missed (a linearizable read through it).
		one, err := clientv3.New(etcdtest.ClientConfig(c.Members[old].ClientAddr))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := one.Get(ctx, "k")
		one.Close()
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != val {
			t.Fatalf("round %d: Get through the restarted %s = %v, %v; want %q", round, c.Members[old].Name, resp, err, val)
		}
	}
}
