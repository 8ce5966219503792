// Process mode: reading the workers' event streams and recording their attempts.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// read consumes worker h's events until its stdout closes, then waits for it to exit.
func (pr *procRun) read(h *procHandle, stdout io.Reader) {
	var readyOnce sync.Once
	markReady := func() { readyOnce.Do(func() { close(h.ready) }) }
	defer close(h.exited)
	defer markReady()
	r := pr.r
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var ev procEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue // not ours (a library writing on stdout)
		}
		at := time.Unix(0, ev.T)
		switch ev.Ev {
		case "ready":
			markReady()
		case "grant":
			if !ev.Second {
				r.counts.rounds.Add(1)
			}
			for {
				last := r.counts.lastToken.Load()
				if ev.Tok <= last || r.counts.lastToken.CompareAndSwap(last, ev.Tok) {
					break
				}
			}
			h.holding.Store(true)
			h.atGrant.Store(h.faults.Load())
			r.timeline.add(at, h.index, evGrant, ev.Tok, false)
		case "release", "lost":
			h.holding.Store(false)
			switch {
			case ev.Ev == "lost":
				r.counts.leasesLost.Add(1)
				end := at
				if ev.Lost != 0 {
					end = time.Unix(0, ev.Lost)
				}
				r.timeline.add(end, h.index, evLost, ev.Tok, false)
			case strings.HasPrefix(ev.Err, "unconfirmed"):
				r.counts.releasesUnconfirmed.Add(1)
				r.timeline.add(at, h.index, evRelease, ev.Tok, false)
			case ev.Err != "":
				r.fail(fmt.Errorf("worker-%d: release token %d: %s", h.index, ev.Tok, ev.Err))
				r.timeline.add(at, h.index, evRelease, ev.Tok, false)
			default:
				r.timeline.add(at, h.index, evRelease, ev.Tok, false)
			}
		case "attempt":
			pr.attempt(h, ev, at)
		case "error":
			if strings.HasPrefix(ev.Err, "acquire") {
				r.counts.acquireErrors.Add(1)
			} else {
				r.fail(fmt.Errorf("worker-%d: %s", h.index, ev.Err))
			}
		case "read":
			if ev.Out == outFenced {
				// A claim refused: the lease was already stale when it read.
				r.counts.fenced.Add(1)
				r.timeline.add(at, h.index, evRejected, ev.Tok, true)
				r.log.eventf("[%s] worker-%d claim of account %d with token %d refused by the database (ErrFenced): a newer holder had claimed it",
					r.name, h.index, ev.Acct, ev.Tok)
			}
		case "fatal":
			msg := ev.Err
			h.fatalErr.Store(&msg)
		}
	}
	_ = h.cmd.Wait()
}

// attempt records a write attempt as worker h saw it.
func (pr *procRun) attempt(h *procHandle, ev procEvent, at time.Time) {
	r := pr.r
	late := h.faults.Load() > h.atGrant.Load()
	rec := attemptRecord{Worker: h.index, Attempt: ev.Att, Account: ev.Acct, Token: ev.Tok, Read: ev.Read, Written: ev.Wrote, Outcome: ev.Out,
		To: ev.To, Amount: ev.Amount}
	pr.mu.Lock()
	pr.attempts = append(pr.attempts, rec)
	pr.mu.Unlock()
	if late && ev.Out != outSkipped {
		r.counts.late.Add(1)
	}
	switch ev.Out {
	case outCommitted:
		r.counts.committed.Add(1)
		r.timeline.add(at, h.index, evCommit, ev.Tok, late)
		if late {
			r.counts.lateCommitted.Add(1)
			r.log.eventf("[%s] worker-%d late write %d->%d on account %d with token %d (newest token issued: %d): committed",
				r.name, h.index, ev.Read, ev.Wrote, ev.Acct, ev.Tok, r.lastToken())
		}
	case outFenced:
		r.counts.fenced.Add(1)
		r.timeline.add(at, h.index, evRejected, ev.Tok, late)
		r.log.eventf("[%s] worker-%d late write %d->%d on account %d with token %d (newest token issued: %d): refused by the database (ErrFenced)",
			r.name, h.index, ev.Read, ev.Wrote, ev.Acct, ev.Tok, r.lastToken())
	case outRefused:
		r.counts.leaseRefusals.Add(1)
		r.timeline.add(at, h.index, evRefused, ev.Tok, late)
	case outSkipped:
		r.counts.skipped.Add(1)
		r.timeline.add(at, h.index, evSkipped, ev.Tok, late)
	default:
		r.fail(fmt.Errorf("worker-%d: write with token %d: %s", h.index, ev.Tok, ev.Err))
	}
}

// waitReady waits for worker h's "ready" event (or its exit).
func (pr *procRun) waitReady(ctx context.Context, h *procHandle) error {
	select {
	case <-h.ready:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(60 * time.Second):
		return fmt.Errorf("worker process %d not ready after 60s", h.index)
	}
	if msg := h.fatalErr.Load(); msg != nil {
		return fmt.Errorf("worker process %d: %s", h.index, *msg)
	}
	if chanClosed(h.exited) {
		return fmt.Errorf("worker process %d exited before it was ready: %v; stderr:\n%s", h.index, h.cmd.ProcessState, h.stderr.String())
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
