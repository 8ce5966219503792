// Package etcdserver runs real etcd servers in-process (go.etcd.io/etcd/server/v3/embed):
// a single node or a cluster on loopback ports, data in a temporary directory, quiet
// logs, a way to kill a member like a crashed process and to restart it from its data
// directory (so that a 3-member cluster survives any number of failovers, one at a time).
// The tests use it through
// internal/etcdtest; the fault drill uses it directly for -locks etcd-embedded.
//
// Timing: the members tick every 50ms with a 500ms election timeout, so a killed leader is
// replaced in about a second and the server's minimum lease TTL (1.5 election timeouts,
// rounded up to seconds) is 1s: a 1s lease really expires after 1s, not etcd's default 2s.
package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
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
	// (default off: faster, and the data dir is thrown away anyway).
	Fsync bool
	// Dir is where the members' data directories go (default: a new temporary
	// directory, removed by Close).
	Dir string
}

// Member is one etcd server of a Cluster.
type Member struct {
	Name string
	// ClientAddr is the host:port clients dial (no scheme), for netproxy targets.
	ClientAddr string

	config func(*gate) *embed.Config // a fresh configuration for each (re)start

	mu      sync.Mutex
	etcd    *embed.Etcd   // the running server, or the last one
	gate    *gate         // admits the running server's client requests
	stopped bool          // killed or closed, not restarted since
	closed  chan struct{} // closed when the last stopped server has closed its listeners
}

// Etcd returns the member's server: the running one, or the last one if it is stopped.
func (m *Member) Etcd() *embed.Etcd {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.etcd
}

// Stopped reports whether the member was stopped (and not restarted since).
func (m *Member) Stopped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopped
}

// running returns the member's server, or nil if it is stopped.
func (m *Member) running() *embed.Etcd {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return nil
	}
	return m.etcd
}

// stop stops the running server hard (raft at once, no leadership transfer) and closes
// its listeners in the background; closed is closed when they are. It reports whether
// the member was running.
func (m *Member) stop() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return false
	}
	m.stopped = true
	e, closed := m.etcd, make(chan struct{})
	m.closed = closed
	m.gate.close() // no read may be running when the backend closes
	e.Server.HardStop()
	go func() {
		defer close(closed)
		e.Close()
	}()
	return true
}

// waitClosed waits until the last stopped server has closed its listeners.
func (m *Member) waitClosed() {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed != nil {
		<-closed
	}
}

// Cluster is a running etcd cluster.
type Cluster struct {
	Members []*Member
	tmpDir  string // removed by Close when Start created it
}

// Start starts a cluster and waits (within ctx, at most 30s) until it has a leader. Free
// loopback ports are picked before the start (the peer URLs must be known to every
// member), so a start that loses a port race is retried with new ports.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Members <= 0 {
		o.Members = 1
	}
	var lastErr error
	for range 5 {
		c, err := start(o)
		if err == nil {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err = c.WaitLeader(wctx)
			cancel()
			if err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("etcdserver: starting a %d-member cluster: %w", o.Members, lastErr)
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

func start(o Options) (*Cluster, error) {
	ports, err := freePorts(2 * o.Members)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "fencedsql-etcd-"); err != nil {
			return nil, err
		}
		c.tmpDir = dir
	}
	// The cluster token makes a member refuse peers of another cluster that happened to
	// reuse a port.
	token := fmt.Sprintf("etcdserver-%d-%d", time.Now().UnixNano(), ports[0])
	var initial []string
	for i := range o.Members {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i]))
	}
	for i := range o.Members {
		name := fmt.Sprintf("m%d", i)
		peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])}
		client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		config := func(g *gate) *embed.Config {
			cfg := embed.NewConfig()
			cfg.Name = name
			cfg.Dir = fmt.Sprintf("%s/%s-%d", dir, name, ports[0])
			cfg.ListenPeerUrls = []url.URL{peer}
			cfg.AdvertisePeerUrls = []url.URL{peer}
			cfg.ListenClientUrls = []url.URL{client}
			cfg.AdvertiseClientUrls = []url.URL{client}
			cfg.InitialCluster = strings.Join(initial, ",")
			cfg.InitialClusterToken = token
			cfg.TickMs = 50
			cfg.ElectionMs = 500
			cfg.UnsafeNoFsync = !o.Fsync
			cfg.LogLevel = "error"
			cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
			cfg.EnableGRPCGateway = false
			cfg.Metrics = "basic"
			cfg.GRPCAdditionalServerOptions = g.options()
			return cfg
		}
		g := &gate{}
		e, err := embed.StartEtcd(config(g))
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Members = append(c.Members, &Member{Name: name, ClientAddr: client.Host, config: config, etcd: e, gate: g})
	}
	for _, m := range c.Members {
		if err := ready(context.Background(), m.etcd); err != nil {
			c.Close()
			return nil, fmt.Errorf("member %s: %w", m.Name, err)
		}
	}
	return c, nil
}

// ready waits until e serves requests, fails, or 30s (or ctx) passed.
func ready(ctx context.Context, e *embed.Etcd) error {
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return err
	case <-t.C:
		return errors.New("not ready after 30s")
	case <-ctx.Done():
		return ctx.Err()
	}
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

// AllEndpoints returns the client addresses of every member, stopped or not.
func (c *Cluster) AllEndpoints() []string {
	eps := make([]string, len(c.Members))
	for i, m := range c.Members {
		eps[i] = m.ClientAddr
	}
	return eps
}

// Leader returns the index of the member every running member agrees is the leader, or
// -1 while there is none (an election is under way).
func (c *Cluster) Leader() int {
	lead := uint64(0)
	for _, m := range c.Members {
		e := m.running()
		if e == nil {
			continue
		}
		l := e.Server.Lead()
		if l == 0 || (lead != 0 && l != lead) {
			return -1
		}
		lead = l
	}
	for i, m := range c.Members {
		if e := m.running(); e != nil && uint64(e.Server.MemberID()) == lead {
			return i
		}
	}
	return -1
}

// WaitLeader waits until the running members agree on a running leader, or ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if i := c.Leader(); i >= 0 {
			return i, nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return -1, fmt.Errorf("etcdserver: no leader elected: %w", ctx.Err())
		}
	}
}

// Kill stops member i abruptly, like a crashed process: raft stops at once, without the
// leadership transfer a graceful stop would make, and requests still reaching it fail.
// Its listeners are closed in the background (a graceful gRPC stop waits for the open
// client streams); Restart and Close wait for that. Killing a stopped member does
// nothing.
func (c *Cluster) Kill(i int) { c.Members[i].stop() }

// Restart starts killed member i again from its data directory, on its ports, and waits
// (within ctx, at most 30s) until it serves: it rejoins the cluster as a follower and
// catches up from the leader. Restarting a running member is an error.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	m := c.Members[i]
	if !m.Stopped() {
		return fmt.Errorf("etcdserver: restart %s: it is running", m.Name)
	}
	m.waitClosed() // its ports are free again
	g := &gate{}
	e, err := embed.StartEtcd(m.config(g))
	if err != nil {
		return fmt.Errorf("etcdserver: restart %s: %w", m.Name, err)
	}
	if err := ready(ctx, e); err != nil {
		g.close()
		e.Server.HardStop()
		e.Close()
		return fmt.Errorf("etcdserver: restart %s: %w", m.Name, err)
	}
	m.mu.Lock()
	m.etcd, m.gate, m.stopped, m.closed = e, g, false, nil
	m.mu.Unlock()
	return nil
}

// Close stops every running member. The whole cluster goes down, so every member first
// stops hard, at once (no leadership transfer to a member that is stopping too), and then
// closes its listeners. Peer connections that were active at that moment end by
// themselves within etcd's 5s peer read timeout.
func (c *Cluster) Close() {
	for _, m := range c.Members {
		m.stop()
	}
	for _, m := range c.Members {
		m.waitClosed()
	}
	if c.tmpDir != "" {
		os.RemoveAll(c.tmpDir)
	}
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
