package locktest

import (
	"context"
	"time"
)

// QueueCounter is implemented by a Namespace that can count, at the service, the
// Acquire calls waiting for a key (the holder not counted). The arrival-order tests
// (FairHandoff, NoLostWakeupWhenWaiterCancels) then wait until each waiter has queued
// before starting the next one, which is exact however loaded the machine is; without
// it they sleep Harness.ArrivalGap, which a machine slow enough can outrun.
type QueueCounter interface {
	Queued(ctx context.Context, key string) (int, error)
}

// awaitQueued returns once n waiters of key have queued at the service: polled through
// the Namespace's QueueCounter, or, without one, after Harness.ArrivalGap. The test
// fails if the waiters do not arrive within a minute (a waiter that never queues is a
// broken backend or harness, not a slow machine).
func (e *env) awaitQueued(key string, n int) {
	e.t.Helper()
	qc, ok := e.ns.(QueueCounter)
	if !ok {
		time.Sleep(e.h.arrivalGap())
		return
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := qc.Queued(ctx, key)
		cancel()
		if err != nil {
			e.t.Fatalf("counting the waiters of %q: %v", key, err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d waiters of %q queued after a minute, want %d", got, key, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
