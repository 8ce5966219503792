package netproxy

import "sync"

// Group hands out proxies to one target, each for an owner (one client "process"), so
// that a test can stall one owner's connections while the others go on. Its Pause,
// Resume, Partition and Heal methods satisfy lockclient/locktest's Faults: a pause and a
// partition both block the owner's proxies (bytes wait and are delivered late, as TCP
// does after a partition heals).
type Group struct {
	target string

	mu      sync.Mutex
	proxies map[string][]*Proxy
}

// NewGroup returns an empty group of proxies to target.
func NewGroup(target string) *Group {
	return &Group{target: target, proxies: map[string][]*Proxy{}}
}

// Proxy starts a new proxy for owner; Close stops it.
func (g *Group) Proxy(owner string) (*Proxy, error) {
	p, err := New(g.target)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.proxies[owner] = append(g.proxies[owner], p)
	g.mu.Unlock()
	return p, nil
}

func (g *Group) each(owner string, f func(*Proxy)) {
	g.mu.Lock()
	ps := append([]*Proxy(nil), g.proxies[owner]...)
	g.mu.Unlock()
	for _, p := range ps {
		f(p)
	}
}

// Pause blocks owner's proxies until Resume.
func (g *Group) Pause(owner string) { g.each(owner, (*Proxy).Block) }

// Resume unblocks owner's proxies.
func (g *Group) Resume(owner string) { g.each(owner, (*Proxy).Unblock) }

// Partition blocks owner's proxies until Heal.
func (g *Group) Partition(owner string) { g.each(owner, (*Proxy).Block) }

// Heal unblocks owner's proxies.
func (g *Group) Heal(owner string) { g.each(owner, (*Proxy).Unblock) }

// Reset drops owner's open connections (they see a reset and reconnect).
func (g *Group) Reset(owner string) { g.each(owner, (*Proxy).Reset) }

// Target is the address the group's proxies forward to.
func (g *Group) Target() string { return g.target }

// Close stops every proxy of the group.
func (g *Group) Close() {
	g.mu.Lock()
	all := g.proxies
	g.proxies = map[string][]*Proxy{}
	g.mu.Unlock()
	for _, ps := range all {
		for _, p := range ps {
			p.Close()
		}
	}
}
