// Package etcdtest runs real etcd servers in-process (go.etcd.io/etcd/server/v3/embed)
// for tests: a single node or a three-node cluster on loopback, with data in the test's
// temporary directory, quiet logs, and a way to kill the leader.
//
// Timing: the members tick every 50ms with a 500ms election timeout, so a killed leader is
// replaced in about a second and the server's minimum lease TTL (1.5 election timeouts,
// rounded up to seconds) is 1s: a 1s lease really expires after 1s, not etcd's default 2s.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Options configures a cluster.
type Options struct {
	// Members is the cluster size (default 1).
	Members int
	// Fsync makes the members fsync their WAL and database like a production server
	// (default off: tests run faster and lose nothing, the data dir is thrown away).
	Fsync bool
}

// Member is one etcd server of a Cluster.
type Member struct {
	Name string
	// ClientAddr is the host:port clients dial (no scheme), for netproxy targets.
	ClientAddr string
	Etcd       *embed.Etcd

	stopOnce sync.Once
	stopped  chan struct{}
}

// Stopped reports whether the member was stopped.
func (m *Member) Stopped() bool {
	select {
	case <-m.stopped:
		return true
	default:
		return false
	}
}

// Cluster is a running etcd cluster; Start registers its shutdown with t.Cleanup.
type Cluster struct {
	tb      testing.TB
	Members []*Member
	closing sync.WaitGroup // background closes of killed members
}

// StartSingle starts a one-node etcd.
func StartSingle(tb testing.TB) *Cluster { return Start(tb, Options{Members: 1}) }

// StartThree starts a three-node etcd cluster.
func StartThree(tb testing.TB) *Cluster { return Start(tb, Options{Members: 3}) }

// Start starts a cluster and waits until it has a leader. Free loopback ports are picked
// before the start (the peer URLs must be known to every member), so a start that loses a
// port race is retried with new ports.
func Start(tb testing.TB, o Options) *Cluster {
	tb.Helper()
	if o.Members <= 0 {
		o.Members = 1
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		c, err := start(tb, o)
		if err == nil {
			tb.Cleanup(c.Close)
			if _, err := c.WaitLeader(30 * time.Second); err != nil {
				tb.Fatalf("etcdtest: %v", err)
			}
			return c
		}
		lastErr = err
	}
	tb.Fatalf("etcdtest: starting a %d-member cluster: %v", o.Members, lastErr)
	return nil
}

func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func start(tb testing.TB, o Options) (*Cluster, error) {
	ports, err := freePorts(2 * o.Members)
	if err != nil {
		return nil, err
	}
	// The cluster token makes a member refuse peers of another test's cluster that
	// happened to reuse a port.
	token := fmt.Sprintf("etcdtest-%d-%d", time.Now().UnixNano(), ports[0])
	var initial []string
	cfgs := make([]*embed.Config, o.Members)
	for i := range o.Members {
		name := fmt.Sprintf("m%d", i)
		peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])}
		client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		cfg := embed.NewConfig()
		cfg.Name = name
		cfg.Dir = tb.TempDir()
		cfg.ListenPeerUrls = []url.URL{peer}
		cfg.AdvertisePeerUrls = []url.URL{peer}
		cfg.ListenClientUrls = []url.URL{client}
		cfg.AdvertiseClientUrls = []url.URL{client}
		cfg.InitialClusterToken = token
		cfg.TickMs = 50
		cfg.ElectionMs = 500
		cfg.UnsafeNoFsync = !o.Fsync
		cfg.LogLevel = "error"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.EnableGRPCGateway = false
		cfg.Metrics = "basic"
		cfgs[i] = cfg
		initial = append(initial, name+"="+peer.String())
	}
	c := &Cluster{tb: tb}
	for _, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Members = append(c.Members, &Member{
			Name:       cfg.Name,
			ClientAddr: cfg.ListenClientUrls[0].Host,
			Etcd:       e,
			stopped:    make(chan struct{}),
		})
	}
	for _, m := range c.Members {
		select {
		case <-m.Etcd.Server.ReadyNotify():
		case err := <-m.Etcd.Err():
			c.Close()
			return nil, fmt.Errorf("member %s: %v", m.Name, err)
		case <-time.After(30 * time.Second):
			c.Close()
			return nil, fmt.Errorf("member %s not ready after 30s", m.Name)
		}
	}
	return c, nil
}

// Endpoints returns the client addresses (host:port) of the running members.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		if !m.Stopped() {
			eps = append(eps, m.ClientAddr)
		}
	}
	return eps
}

// Leader returns the index of the member every running member agrees is the leader, or
// -1 while there is none (an election is under way).
func (c *Cluster) Leader() int {
	lead := uint64(0)
	for _, m := range c.Members {
		if m.Stopped() {
			continue
		}
		l := m.Etcd.Server.Lead()
		if l == 0 || (lead != 0 && l != lead) {
			return -1
		}
		lead = l
	}
	for i, m := range c.Members {
		if !m.Stopped() && uint64(m.Etcd.Server.MemberID()) == lead {
			return i
		}
	}
	return -1
}

// WaitLeader waits until the running members agree on a running leader.
func (c *Cluster) WaitLeader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		if i := c.Leader(); i >= 0 {
			return i, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("no leader after %v", timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill stops member i abruptly, like a crashed process: raft stops at once, without the
// leadership transfer a graceful stop would make, and requests still reaching it fail.
// Its listeners are closed in the background (a graceful gRPC stop waits for the open
// client streams), and Close waits for that.
func (c *Cluster) Kill(i int) {
	m := c.Members[i]
	m.stopOnce.Do(func() {
		m.Etcd.Server.HardStop()
		close(m.stopped)
		c.closing.Add(1)
		go func() {
			defer c.closing.Done()
			m.Etcd.Close()
		}()
	})
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

// Close stops every running member. The whole cluster goes down, so every member first
// stops hard, at once (no leadership transfer to a member that is stopping too), and then
// closes its listeners. Peer connections that were active at that moment end by
// themselves within etcd's 5s peer read timeout: see VerifyTestMain.
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	for _, m := range c.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.stopOnce.Do(func() {
				m.Etcd.Server.HardStop()
				m.Etcd.Close()
				close(m.stopped)
			})
		}()
	}
	wg.Wait()
	c.closing.Wait()
}

// ClientConfig is a quiet client configuration for endpoints with short timeouts, so
// that a cut connection surfaces quickly as an error rather than a hang.
func ClientConfig(endpoints ...string) clientv3.Config {
	return clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	}
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
