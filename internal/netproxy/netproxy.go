// Package netproxy is a loopback TCP proxy that tests put between one client and a
// server to make partitions: Block stops forwarding in both directions (bytes wait, as
// in a black-holed network that later heals and TCP retransmits), Unblock resumes,
// Reset drops every open connection, OneWay makes an asymmetric partition (the
// client's bytes reach the server, its replies are lost), and Intercept lets a test
// act on the client chunk that carries a given statement. It only listens on and dials
// loopback addresses.
package netproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards connections accepted on Addr to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	blocked chan struct{} // non-nil while blocked; closed by Unblock
	oneway  bool          // replies are discarded (OneWay)
	hook    func(chunk []byte) Verdict
	conns   map[net.Conn]bool // true: a connection to the target (Upstream)
	closed  bool
	wg      sync.WaitGroup
}

// New starts a proxy on 127.0.0.1:0 forwarding to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Block stops forwarding: new and existing connections stall until Unblock.
func (p *Proxy) Block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blocked == nil {
		p.blocked = make(chan struct{})
	}
}

// Unblock resumes forwarding (and ends OneWay); stalled bytes are delivered.
func (p *Proxy) Unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blocked != nil {
		close(p.blocked)
		p.blocked = nil
	}
	p.oneway = false
}

// OneWay lets the client's bytes reach the server but discards the server's replies
// from now on, then resets every connection after d and forwards both ways again: a
// statement (a COMMIT) that the server ran and whose answer the client never gets.
func (p *Proxy) OneWay(d time.Duration) {
	p.mu.Lock()
	p.oneway = true
	p.mu.Unlock()
	time.AfterFunc(d, func() {
		p.Reset()
		p.mu.Lock()
		p.oneway = false
		p.mu.Unlock()
	})
}

// Verdict is what an Intercept hook decides for one chunk a client sent.
type Verdict int

const (
	// Pass forwards the chunk as usual.
	Pass Verdict = iota
	// Hold blocks the proxy (Block) before the chunk is forwarded: it waits, with
	// every other byte both ways, until Unblock — the network goes dark at that chunk.
	Hold
	// Cut drops the chunk and closes this client's connection and its server side:
	// the connection is lost under the statement, which the server never receives.
	Cut
)

// Intercept has f judge every chunk a client sends, in the order sent, before it is
// forwarded (nil: none). f runs on the connection's goroutine; a chunk is what one
// read returned, so a statement is matched within the chunk that carries it.
func (p *Proxy) Intercept(f func(chunk []byte) Verdict) {
	p.mu.Lock()
	p.hook = f
	p.mu.Unlock()
}

// judge returns the Intercept hook's verdict on a client chunk (Pass without one).
func (p *Proxy) judge(chunk []byte) Verdict {
	p.mu.Lock()
	f := p.hook
	p.mu.Unlock()
	if f == nil {
		return Pass
	}
	return f(chunk)
}

// Reset closes every open connection (the client sees a reset and reconnects).
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Upstream returns the local addresses of the proxy's open connections to its target:
// each client's address as the server sees it (a MariaDB session's process list HOST,
// a PostgreSQL backend's client_addr and client_port), by which a test ends exactly
// the server sessions behind this proxy.
func (p *Proxy) Upstream() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var addrs []string
	for c, up := range p.conns {
		if up {
			addrs = append(addrs, c.LocalAddr().String())
		}
	}
	return addrs
}

// Retarget forwards the connections accepted from now on to target and closes every
// open one, as a virtual IP, DNS name or connection pooler moved to a new primary
// does: the old server's connections die, new ones reach the new server.
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
	p.Reset()
}

// Close stops the proxy and closes all connections.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	if p.blocked != nil {
		close(p.blocked)
		p.blocked = nil
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.Reset()
	p.wg.Wait()
	return err
}

// gate waits while the proxy is blocked and reports whether a chunk going the way
// given (replies: server to client) is to be forwarded.
func (p *Proxy) gate(replies bool) bool {
	p.mu.Lock()
	ch, drop := p.blocked, replies && p.oneway
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return !drop
}

func (p *Proxy) track(c net.Conn, upstream bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = upstream
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if !p.track(in, false) {
				return
			}
			defer p.untrack(in)
			p.mu.Lock()
			target := p.target
			p.mu.Unlock()
			out, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			if !p.track(out, true) {
				return
			}
			defer p.untrack(out)
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); p.pipe(out, in, false) }()
			go func() { defer wg.Done(); p.pipe(in, out, true) }()
			wg.Wait()
		}()
	}
}

// pipe copies src to dst in chunks, judging each client chunk (Intercept) and waiting
// at the gate before forwarding each one (replies: src is the server).
func (p *Proxy) pipe(dst, src net.Conn, replies bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !replies {
			switch p.judge(buf[:n]) {
			case Cut:
				return
			case Hold:
				p.Block()
			}
		}
		if n > 0 && p.gate(replies) {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			return
		}
	}
}
