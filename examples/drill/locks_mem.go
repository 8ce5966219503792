package main

import (
	"context"

	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// memLocks is the in-process service, whose own Pause/Partition make the faults.
type memLocks struct{ svc *memlock.Service }

func (m memLocks) worker(_ int, owner string) (workerLocks, error) {
	return workerLocks{backend: m.svc, faults: memFaults{m.svc, owner}, close: func() {}}, nil
}
func (m memLocks) lastToken() uint64           { t, _ := m.svc.LastToken(context.Background()); return t }
func (m memLocks) close(context.Context) error { return nil }

type memFaults struct {
	svc   *memlock.Service
	owner string
}

func (f memFaults) pause()     { f.svc.Pause(f.owner) }
func (f memFaults) resume()    { f.svc.Resume(f.owner) }
func (f memFaults) partition() { f.svc.Partition(f.owner) }
func (f memFaults) heal()      { f.svc.Heal(f.owner) }
