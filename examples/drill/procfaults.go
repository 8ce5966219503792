// Process mode: the fault schedule — freezing workers and cutting their proxies.

package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// injectFaults freezes or partitions workers until done closes: at exponentially
// distributed intervals (mean -fault-every), one worker that is not already faulted —
// one holding a lease if there is any — for 1.5 to 3 TTLs (plus the lag of etcd).
func (pr *procRun) injectFaults(ctx context.Context, done <-chan struct{}) {
	cfg := pr.r.cfg
	if cfg.PauseProb+cfg.PartitionProb <= 0 || cfg.FaultEvery <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 1<<32))
	maxFaulted := max(1, cfg.Procs/2)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		wait := time.Duration(rng.ExpFloat64() * float64(cfg.FaultEvery))
		roll, pick, hold := rng.Float64(), rng.Uint64(), time.Duration(float64(cfg.TTL)*(1.5+1.5*rng.Float64()))+cfg.serviceLag()
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		var holders, idle []*procHandle
		faulted := 0
		for _, h := range pr.workers {
			switch {
			case h.faulted.Load():
				faulted++
			case chanClosed(h.exited):
			case h.holding.Load():
				holders = append(holders, h)
			default:
				idle = append(idle, h)
			}
		}
		if faulted >= maxFaulted {
			continue
		}
		cands := holders
		if len(cands) == 0 {
			cands = idle
		}
		if len(cands) == 0 {
			continue
		}
		h := cands[pick%uint64(len(cands))]
		freeze := roll < cfg.PauseProb/(cfg.PauseProb+cfg.PartitionProb)
		if !pr.startFault(h, freeze, len(holders) > 0) {
			return
		}
		wg.Go(func() {
			select {
			case <-time.After(hold):
			case <-done:
			case <-ctx.Done():
			}
			pr.endFault(h, freeze)
		})
	}
}

func chanClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (pr *procRun) startFault(h *procHandle, freeze, holder bool) bool {
	pr.faultMu.Lock()
	defer pr.faultMu.Unlock()
	if pr.ended {
		return false
	}
	r := pr.r
	h.faulted.Store(true)
	h.faults.Add(1)
	if holder {
		r.counts.holderFaults.Add(1)
	}
	now := time.Now()
	if freeze {
		r.counts.pauses.Add(1)
		_ = h.cmd.Process.Signal(sigStop)
		r.timeline.add(now, h.index, evPauseStart, 0, false)
		r.log.eventf("[%s] worker-%d frozen (SIGSTOP)", r.name, h.index)
	} else {
		r.counts.partitions.Add(1)
		h.proxies.partition()
		r.timeline.add(now, h.index, evPartitionStart, 0, false)
		r.log.eventf("[%s] worker-%d cut off from the lock service", r.name, h.index)
	}
	return true
}

func (pr *procRun) endFault(h *procHandle, freeze bool) {
	pr.faultMu.Lock()
	defer pr.faultMu.Unlock()
	if !h.faulted.Load() {
		return // thawAll was first
	}
	if freeze {
		_ = h.cmd.Process.Signal(sigCont)
	} else {
		h.proxies.heal()
	}
	h.faulted.Store(false)
	pr.r.timeline.add(time.Now(), h.index, evFaultEnd, 0, false)
}
