package etcdtest_test

import (
	"context"
	"testing"
	"time"

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
