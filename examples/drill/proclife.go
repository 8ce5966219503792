// Process mode: waiting for, signalling and stopping the worker processes.

package main

import (
	"context"
	"os"
)

// waitWorkers waits for every worker to exit (their rounds or -duration are up); when
// ctx ends it asks them to stop (SIGTERM).
func (pr *procRun) waitWorkers(ctx context.Context) {
	for _, h := range pr.workers {
		for done := false; !done; {
			select {
			case <-h.exited:
				done = true
			case <-ctx.Done():
				pr.thawAll()
				pr.signalAll(sigTerm)
				<-h.exited
				done = true
			}
		}
	}
}

func (pr *procRun) signalAll(sig os.Signal) {
	for _, h := range pr.workers {
		if h.cmd.Process != nil {
			_ = h.cmd.Process.Signal(sig)
		}
	}
}

// stopAll kills workers still running (an early return) and closes the proxies.
func (pr *procRun) stopAll() {
	pr.thawAll()
	for _, h := range pr.workers {
		if h.cmd.Process != nil && h.cmd.ProcessState == nil {
			select {
			case <-h.exited:
			default:
				_ = h.cmd.Process.Kill()
				<-h.exited
			}
		}
		h.proxies.close()
	}
}

// thawAll ends every fault: SIGCONT to every worker, proxies healed. No fault starts
// after it.
func (pr *procRun) thawAll() {
	pr.faultMu.Lock()
	defer pr.faultMu.Unlock()
	pr.ended = true
	for _, h := range pr.workers {
		if h.faulted.Load() {
			if h.cmd.Process != nil {
				_ = h.cmd.Process.Signal(sigCont)
			}
			h.proxies.heal()
			h.faulted.Store(false)
		}
	}
}
