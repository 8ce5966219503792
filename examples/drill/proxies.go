package main

import (
	"fmt"

	"github.com/fencedsql/fencedsql/internal/netproxy"
)

// proxies are one worker's loopback proxies to the lock service (one per etcd member).
// A pause blocks them, so the requests wait in the proxy and are delivered when the
// pause ends; a partition blocks them too, and its end resets every connection before
// unblocking, so the requests that were held are lost and the client reconnects.
type proxies []*netproxy.Proxy

func newProxies(targets []string) (proxies, error) {
	var ps proxies
	for _, t := range targets {
		p, err := netproxy.New(t)
		if err != nil {
			ps.close()
			return nil, fmt.Errorf("proxy to the lock service at %s: %w", t, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func (ps proxies) addrs() []string {
	a := make([]string, len(ps))
	for i, p := range ps {
		a[i] = p.Addr()
	}
	return a
}

func (ps proxies) pause() {
	for _, p := range ps {
		p.Block()
	}
}

func (ps proxies) resume() {
	for _, p := range ps {
		p.Unblock()
	}
}

func (ps proxies) partition() { ps.pause() }

func (ps proxies) heal() {
	for _, p := range ps {
		p.Reset()
		p.Unblock()
	}
}

func (ps proxies) close() {
	for _, p := range ps {
		p.Close()
	}
}
