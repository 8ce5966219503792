package main

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

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// etcdCluster is an etcd cluster run inside the drill's process (-locks etcd-embedded):
// real etcd servers (go.etcd.io/etcd/server/v3/embed) on loopback ports, with their data
// in a temporary directory. The members tick every 50ms with a 500ms election timeout,
// like internal/etcdtest's, so that a killed leader is replaced in about a second and the
// server's minimum lease TTL is 1s (etcd's default election timeout would make it 2s).
type etcdCluster struct {
	dir     string
	members []*etcdMember
	closing sync.WaitGroup // background closes of killed members
}

// etcdMember is one server of an etcdCluster.
type etcdMember struct {
	name       string
	clientAddr string // host:port clients dial
	etcd       *embed.Etcd
	stopOnce   sync.Once
	stopped    chan struct{}
}

func (m *etcdMember) isStopped() bool {
	select {
	case <-m.stopped:
		return true
	default:
		return false
	}
}

// startEtcd starts an n-member cluster and waits until it has a leader. The loopback
// ports are picked before the start (every member must know its peers' URLs), so a start
// that loses a port race is retried with new ports.
func startEtcd(ctx context.Context, n int) (*etcdCluster, error) {
	var lastErr error
	for range 5 {
		c, err := startEtcdOnce(n)
		if err == nil {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err = c.waitLeader(wctx)
			cancel()
			if err == nil {
				return c, nil
			}
			c.close()
			return nil, err
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("starting a %d-member etcd cluster: %w", n, lastErr)
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

func startEtcdOnce(n int) (*etcdCluster, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fencedsql-drill-etcd-")
	if err != nil {
		return nil, err
	}
	c := &etcdCluster{dir: dir}
	// The cluster token makes a member refuse peers of another cluster that happened to
	// reuse a port.
	token := fmt.Sprintf("fencedsql-drill-%d-%d", time.Now().UnixNano(), ports[0])
	var initial []string
	cfgs := make([]*embed.Config, n)
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])}
		client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		cfg := embed.NewConfig()
		cfg.Name = name
		cfg.Dir = fmt.Sprintf("%s/%s", dir, name)
		cfg.ListenPeerUrls = []url.URL{peer}
		cfg.AdvertisePeerUrls = []url.URL{peer}
		cfg.ListenClientUrls = []url.URL{client}
		cfg.AdvertiseClientUrls = []url.URL{client}
		cfg.InitialClusterToken = token
		cfg.TickMs = 50
		cfg.ElectionMs = 500
		cfg.UnsafeNoFsync = true // throwaway data
		cfg.LogLevel = "error"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.EnableGRPCGateway = false
		cfg.Metrics = "basic"
		cfgs[i] = cfg
		initial = append(initial, name+"="+peer.String())
	}
	for _, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			c.close()
			return nil, err
		}
		c.members = append(c.members, &etcdMember{
			name: cfg.Name, clientAddr: cfg.ListenClientUrls[0].Host, etcd: e, stopped: make(chan struct{}),
		})
	}
	for _, m := range c.members {
		select {
		case <-m.etcd.Server.ReadyNotify():
		case err := <-m.etcd.Err():
			c.close()
			return nil, fmt.Errorf("etcd member %s: %w", m.name, err)
		case <-time.After(30 * time.Second):
			c.close()
			return nil, fmt.Errorf("etcd member %s not ready after 30s", m.name)
		}
	}
	return c, nil
}

// endpoints returns the client addresses (host:port) of every member, stopped or not.
func (c *etcdCluster) endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.clientAddr
	}
	return eps
}

// leader returns the index of the member every running member agrees is the leader, or
// -1 while there is none.
func (c *etcdCluster) leader() int {
	lead := uint64(0)
	for _, m := range c.members {
		if m.isStopped() {
			continue
		}
		l := m.etcd.Server.Lead()
		if l == 0 || (lead != 0 && l != lead) {
			return -1
		}
		lead = l
	}
	for i, m := range c.members {
		if !m.isStopped() && uint64(m.etcd.Server.MemberID()) == lead {
			return i
		}
	}
	return -1
}

// waitLeader waits until the running members agree on a running leader.
func (c *etcdCluster) waitLeader(ctx context.Context) (int, error) {
	for {
		if i := c.leader(); i >= 0 {
			return i, nil
		}
		if !sleep(ctx, 10*time.Millisecond) {
			return -1, errors.New("etcd: no leader elected")
		}
	}
}

// kill stops member i abruptly, like a crashed process: raft stops at once, without the
// leadership transfer of a graceful stop. Its listeners close in the background (a
// graceful gRPC stop waits for open client streams); close waits for that.
func (c *etcdCluster) kill(i int) {
	m := c.members[i]
	m.stopOnce.Do(func() {
		m.etcd.Server.HardStop()
		close(m.stopped)
		c.closing.Add(1)
		go func() {
			defer c.closing.Done()
			m.etcd.Close()
		}()
	})
}

// close stops every running member (all at once, hard: no leadership transfer to a
// member that is stopping too) and removes the data directory.
func (c *etcdCluster) close() {
	var wg sync.WaitGroup
	for _, m := range c.members {
		wg.Go(func() {
			m.stopOnce.Do(func() {
				m.etcd.Server.HardStop()
				m.etcd.Close()
				close(m.stopped)
			})
		})
	}
	wg.Wait()
	c.closing.Wait()
	os.RemoveAll(c.dir)
}
