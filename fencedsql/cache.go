package fencedsql

import (
	"sync"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// planCache maps statement text to its plan, for the plain and the ExpectVersion
// variant. It is bounded: when full, an arbitrary entry is evicted (Go's map iteration
// order), which keeps hot statements resident with high probability and costs nothing
// on the hit path. A hit takes a read lock and allocates nothing.
type planCache struct {
	mu    sync.RWMutex
	max   int
	plain map[string]*plan.Plan
	ver   map[string]*plan.Plan
}

func newPlanCache(max int) *planCache {
	if max <= 0 {
		max = 1
	}
	return &planCache{max: max, plain: map[string]*plan.Plan{}, ver: map[string]*plan.Plan{}}
}

func (c *planCache) get(sql string, versioned bool) (*plan.Plan, bool) {
	c.mu.RLock()
	m := c.plain
	if versioned {
		m = c.ver
	}
	p, ok := m[sql]
	c.mu.RUnlock()
	return p, ok
}

func (c *planCache) put(sql string, versioned bool, p *plan.Plan) {
	c.mu.Lock()
	m := c.plain
	if versioned {
		m = c.ver
	}
	if len(m) >= c.max {
		for k := range m {
			delete(m, k)
			break
		}
	}
	m[sql] = p
	c.mu.Unlock()
}
