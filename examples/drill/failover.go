package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// failoverReport is what one scheduled failover did (etcd-embedded -failover).
type failoverReport struct {
	Killed           string `json:"killed"`                       // the leader that was killed
	AtMS             int64  `json:"at_ms"`                        // since the run's start
	RoundsBefore     int64  `json:"rounds_before"`                // leases granted before it
	NewLeader        string `json:"new_leader"`                   // "" if none was elected
	ElectedAfterMS   int64  `json:"elected_after_ms"`             // from the kill to the new leader
	RestartedAfterMS int64  `json:"restarted_after_ms,omitempty"` // from the kill to the killed member serving again
	Error            string `json:"error,omitempty"`
}

// scheduleFailover kills the leader of svc cfg.Failovers times, evenly spread over the
// run: after 1/(n+1), 2/(n+1), … of its rounds (or of -duration). After each kill it
// waits for the new leader and restarts the killed member, so that the cluster keeps its
// majority for the next kill. The returned function waits for the schedule to end (it
// stops when the run does) and reports each failover that started.
func (r *runner) scheduleFailover(ctx context.Context, svc failoverService, start time.Time) (wait func() []failoverReport) {
	done := make(chan struct{})
	var (
		wg   sync.WaitGroup
		reps []failoverReport
	)
	n := max(r.cfg.Failovers, 1)
	total := int64(r.cfg.Rounds * r.cfg.Workers)
	due := func(k int, now time.Time) bool { // the k-th failover (1-based) is due
		if total > 0 {
			return r.counts.rounds.Load() >= (total*int64(k)+int64(n))/int64(n+1)
		}
		return now.Sub(start) >= r.cfg.Duration*time.Duration(k)/time.Duration(n+1)
	}
	wg.Go(func() {
		ticker := time.NewTicker(5 * time.Millisecond)
		defer ticker.Stop()
		for k := 1; k <= n; {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-ticker.C:
				if !due(k, now) {
					continue
				}
				rep, ok := r.failover(ctx, svc, start)
				reps = append(reps, rep)
				if !ok {
					return
				}
				k++
			}
		}
	})
	return func() []failoverReport {
		close(done)
		wg.Wait()
		return reps
	}
}

// failover kills the leader, waits for the next one and restarts the killed member; ok
// is false (and the run failed) if a step did not work.
func (r *runner) failover(ctx context.Context, svc failoverService, start time.Time) (rep failoverReport, ok bool) {
	rep.RoundsBefore = r.counts.rounds.Load()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	killed, err := svc.killLeader(ctx)
	at := time.Now()
	rep.AtMS = at.Sub(start).Milliseconds()
	if err != nil {
		rep.Error = err.Error()
		r.fail(fmt.Errorf("failover: %w", err))
		return rep, false
	}
	rep.Killed = killed
	r.log.eventf("[%s] failover: killed the etcd leader %s after %d rounds", r.name, killed, rep.RoundsBefore)
	leader, err := svc.waitLeader(ctx)
	if err != nil {
		rep.Error = err.Error()
		r.fail(fmt.Errorf("failover: after killing %s: %w", killed, err))
		return rep, false
	}
	rep.NewLeader, rep.ElectedAfterMS = leader, time.Since(at).Milliseconds()
	r.log.eventf("[%s] failover: %s is the new leader, %v after the kill", r.name, leader,
		time.Since(at).Round(time.Millisecond))
	if err := svc.restart(ctx, killed); err != nil {
		rep.Error = err.Error()
		r.fail(fmt.Errorf("failover: restarting %s: %w", killed, err))
		return rep, false
	}
	rep.RestartedAfterMS = time.Since(at).Milliseconds()
	r.log.eventf("[%s] failover: %s restarted and rejoined, %v after the kill", r.name, killed,
		time.Since(at).Round(time.Millisecond))
	return rep, true
}
