package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// failoverReport is what the scheduled failover did (etcd-embedded -failover).
type failoverReport struct {
	Killed         string `json:"killed"`           // the leader that was killed
	AtMS           int64  `json:"at_ms"`            // since the run's start
	RoundsBefore   int64  `json:"rounds_before"`    // leases granted before it
	NewLeader      string `json:"new_leader"`       // "" if none was elected
	ElectedAfterMS int64  `json:"elected_after_ms"` // from the kill to the new leader
	Error          string `json:"error,omitempty"`
}

// scheduleFailover kills the leader of svc once half of the run is done: half of its
// rounds (or of -duration). The returned function waits for it and reports what
// happened; nil if the run ended first.
func (r *runner) scheduleFailover(ctx context.Context, svc failoverService, start time.Time) (wait func() *failoverReport) {
	done := make(chan struct{})
	var (
		wg  sync.WaitGroup
		rep *failoverReport
	)
	total := int64(r.cfg.Rounds * r.cfg.Workers)
	wg.Go(func() {
		ticker := time.NewTicker(5 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-ticker.C:
				granted := r.counts.rounds.Load()
				if (total > 0 && granted < (total+1)/2) || (total == 0 && now.Sub(start) < r.cfg.Duration/2) {
					continue
				}
				rep = &failoverReport{RoundsBefore: granted}
				failoverCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				killed, err := svc.killLeader(failoverCtx)
				at := time.Now()
				rep.AtMS = at.Sub(start).Milliseconds()
				if err != nil {
					rep.Error = err.Error()
					r.fail(fmt.Errorf("failover: %w", err))
					return
				}
				rep.Killed = killed
				r.log.eventf("[%s] failover: killed the etcd leader %s after %d rounds", r.name, killed, granted)
				leader, err := svc.waitLeader(failoverCtx)
				if err != nil {
					rep.Error = err.Error()
					r.fail(fmt.Errorf("failover: after killing %s: %w", killed, err))
					return
				}
				rep.NewLeader, rep.ElectedAfterMS = leader, time.Since(at).Milliseconds()
				r.log.eventf("[%s] failover: %s is the new leader, %v after the kill", r.name, leader,
					time.Since(at).Round(time.Millisecond))
				return
			}
		}
	})
	return func() *failoverReport {
		close(done)
		wg.Wait()
		return rep
	}
}
