package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
)

// lastToken is the last fencing token the lock service issued, or the greatest one a
// worker was granted when the service cannot tell.
func (r *runner) lastToken() uint64 {
	if t := r.locks.lastToken(); t != 0 {
		return t
	}
	return r.counts.lastToken.Load()
}

// worker runs worker w's rounds, with a lock client of its own, until they or the
// run's time are up.
func (r *runner) worker(ctx context.Context, w int) {
	owner := fmt.Sprintf("worker-%d", w)
	conn, err := r.locks.worker(w, owner)
	if err != nil {
		r.fail(fmt.Errorf("%s: connecting to the lock service: %w", owner, err))
		return
	}
	defer conn.close() // after the client's Close below
	opts := []lockclient.Option{lockclient.WithTTL(r.cfg.TTL), lockclient.WithOwner(owner)}
	if r.meters != nil {
		opts = append(opts, lockclient.WithMeterProvider(r.meters))
	}
	client := lockclient.New(conn.backend, opts...)
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = client.Close(closeCtx)
	}()
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(w)))
	for i := 0; r.cfg.Rounds == 0 || i < r.cfg.Rounds; i++ {
		if ctx.Err() != nil || (!r.deadline.IsZero() && !time.Now().Before(r.deadline)) {
			return
		}
		r.round(ctx, client, conn.faults, w, owner, r.cfg.nextStep(rng))
	}
}

// round is one lease: stamp and read, work, (fault), write, release.
func (r *runner) round(ctx context.Context, client *lockclient.Client, workerFaults faults, w int, owner string, plan step) {
	lease, err := client.Acquire(ctx, r.key)
	if err != nil {
		if ctx.Err() == nil {
			r.fail(fmt.Errorf("%s: acquire: %w", owner, err))
		}
		return
	}
	r.counts.rounds.Add(1)
	tok := lease.Token()
	for {
		last := r.counts.lastToken.Load()
		if tok <= last || r.counts.lastToken.CompareAndSwap(last, tok) {
			break
		}
	}
	var lostAt chan time.Time
	if r.timeline != nil {
		r.timeline.add(time.Now(), w, evGrant, tok, false)
		// When the lease ends (lost, or released), for the timeline's bar.
		lostAt = make(chan time.Time, 1)
		go func() {
			<-lease.Lost()
			lostAt <- time.Now()
		}()
	}
	defer r.release(ctx, lease, w, lostAt)
	boundCtx := fencedsql.WithToken(ctx, tok)
	if r.cfg.Bind == "lease" {
		boundCtx = fencedsql.WithLease(ctx, lease)
	}

	bal, err := r.read(boundCtx)
	if err != nil {
		if ctx.Err() == nil {
			r.fail(fmt.Errorf("%s: read with token %d: %w", owner, tok, err))
		}
		return
	}
	if !sleep(ctx, plan.work) {
		return
	}
	late := plan.fault != faultNone
	if late {
		r.inject(ctx, workerFaults, w, owner, tok, bal, plan)
		if ctx.Err() != nil {
			return
		}
		r.counts.late.Add(1)
	}

	// The write. A late writer goes ahead exactly like a punctual one: it does not
	// look at lease.Lost() first.
	err = r.write(boundCtx, bal+1)
	now := time.Now()
	switch {
	case err == nil:
		r.counts.committed.Add(1)
		r.timeline.add(now, w, evCommit, tok, late)
		if late {
			r.counts.lateCommitted.Add(1)
			r.log.eventf("[%s] %s late write balance=%d with token %d (newest token issued: %d): committed",
				r.name, owner, bal+1, tok, r.lastToken())
		}
	case errors.Is(err, fencedsql.ErrFenced):
		r.counts.fenced.Add(1)
		r.timeline.add(now, w, evRejected, tok, late)
		r.log.eventf("[%s] %s late write balance=%d with token %d (newest token issued: %d): refused by the database (ErrFenced)",
			r.name, owner, bal+1, tok, r.lastToken())
	case errors.Is(err, lockclient.ErrLeaseLost):
		r.counts.leaseRefusals.Add(1)
		r.timeline.add(now, w, evRefused, tok, late)
		r.log.eventf("[%s] %s late write balance=%d with token %d: Commit refused, lease lost (ErrLeaseLost)",
			r.name, owner, bal+1, tok)
	default:
		if ctx.Err() == nil {
			r.fail(fmt.Errorf("%s: write with token %d: %w", owner, tok, err))
		}
	}
}

// inject applies a fault between the read and the write.
func (r *runner) inject(ctx context.Context, workerFaults faults, w int, owner string, tok uint64, bal int64, plan step) {
	if r.timeline != nil {
		kind := evPauseStart
		if plan.fault == faultPartition {
			kind = evPartitionStart
		}
		r.timeline.add(time.Now(), w, kind, tok, false)
		defer func() { r.timeline.add(time.Now(), w, evFaultEnd, tok, false) }()
	}
	switch plan.fault {
	case faultPause:
		r.counts.pauses.Add(1)
		r.log.eventf("[%s] %s read balance %d with token %d, then pauses %v (TTL %v)",
			r.name, owner, bal, tok, plan.hold.Round(time.Millisecond), r.cfg.TTL)
		workerFaults.pause()
		defer workerFaults.resume()
	case faultPartition:
		r.counts.partitions.Add(1)
		r.log.eventf("[%s] %s read balance %d with token %d, then is cut off from the lock service for %v (TTL %v)",
			r.name, owner, bal, tok, plan.hold.Round(time.Millisecond), r.cfg.TTL)
		workerFaults.partition()
		defer workerFaults.heal()
	}
	sleep(ctx, plan.hold)
}

// read claims the row with the transaction's token and reads the balance, in one
// transaction: a locking read (SELECT … FOR UPDATE, which the fenced driver turns into
// a claim) where the database has one, else a no-op UPDATE then the read.
func (r *runner) read(ctx context.Context) (int64, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	if r.q.stamp != "" {
		if _, err := tx.ExecContext(ctx, r.q.stamp); err != nil {
			return 0, err
		}
	}
	var bal int64
	if err := tx.QueryRowContext(ctx, r.q.read).Scan(&bal); err != nil {
		return 0, err
	}
	return bal, tx.Commit()
}

// write stores the new balance in a transaction bound to ctx's token or lease.
func (r *runner) write(ctx context.Context, bal int64) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	if _, err := tx.ExecContext(ctx, r.q.update, bal); err != nil {
		return err
	}
	return tx.Commit()
}

// release releases lease and counts it as lost if the client or the service says so.
// lostAt (timeline only) delivers the moment the lease's Lost channel closed.
func (r *runner) release(ctx context.Context, lease *lockclient.Lease, w int, lostAt <-chan time.Time) {
	lostBefore := lease.Err() != nil
	releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := lease.Release(releaseCtx)
	lost := lostBefore || errors.Is(err, lockclient.ErrLeaseLost) || errors.Is(err, lockclient.ErrNotOwner)
	switch {
	case lost:
		r.counts.leasesLost.Add(1)
	case errors.Is(err, lockclient.ErrUnavailable) && ctx.Err() == nil:
		// The service could not be reached (a failover, a reset connection): the lock
		// stays held until its lease expires there. Not an error of the drill.
		r.counts.releasesUnconfirmed.Add(1)
		r.log.eventf("[%s] release of token %d unconfirmed: %v", r.name, lease.Token(), err)
	case err != nil && ctx.Err() == nil:
		r.fail(fmt.Errorf("release token %d: %w", lease.Token(), err))
	}
	if lostAt != nil {
		end := <-lostAt // closed by now: lost earlier, or by this Release
		switch {
		case lostBefore:
			r.timeline.add(end, w, evLost, lease.Token(), false)
		case lost:
			// The client had not noticed; the service had already expired the lease.
			r.timeline.add(time.Now(), w, evLost, lease.Token(), false)
		default:
			r.timeline.add(end, w, evRelease, lease.Token(), false)
		}
	}
}

func (r *runner) fail(err error) {
	r.counts.other.Add(1)
	r.errMu.Lock()
	if r.firstErr == nil {
		r.firstErr = err
	}
	r.errMu.Unlock()
	r.log.eventf("[%s] error: %v", r.name, err)
}

// sleep waits d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
