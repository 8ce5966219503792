package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/internal/backendutil"
)

// The ticket queue: AcquireQueued takes a ticket per key, polls by its place in line
// until the grant script hands it the key, and leaves or abandons the queue when it
// gives up. Clean-ups that fail are retried in the background.

// AcquireQueued implements lockclient.QueueSession (see the package doc: a FIFO queue
// per key, polled).
func (s *session) AcquireQueued(ctx context.Context, key string) (lockclient.Grant, time.Time, error) {
	req, err := randomHex(8)
	if err != nil {
		return lockclient.Grant{}, time.Time{}, err
	}
	head := s.id + ":" + req + ":"
	waiter := s.id + ":" + req
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	queued := false
	for {
		sent := time.Now()
		code, val, rank, err := s.grant(ctx, "acquire", key, head, waiter)
		if err != nil {
			if !refusedByCheck(err) {
				// Unknown outcome: the request may still grant the key, or queue us.
				s.abandon(key, head, waiter)
			}
			return lockclient.Grant{}, time.Time{}, s.b.scriptFailed("acquire", key, err)
		}
		if code == 1 {
			g, err := s.granted(key, head, val)
			return g, sent, err
		}
		queued = true
		pttl, _ := val.(int64)
		var d time.Duration
		if rank <= 2 {
			// Among the first three in line: poll soon, and the first one also just after
			// the holder's expiry if that comes first.
			d = s.b.pollMin + backendutil.PollDelay(0, s.b.pollMin)
			if code == 0 && pttl > 0 {
				d = min(d, time.Duration(pttl)*time.Millisecond+backendutil.AfterExpiry())
			}
		} else {
			d = backendutil.PollDelay(s.b.pollMax/2, s.b.pollMax)
		}
		d = min(d, time.Duration(s.ttlMillis)*time.Millisecond/3) // keep the liveness key
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			if queued {
				s.leave(key, waiter)
			}
			return lockclient.Grant{}, time.Time{}, fmt.Errorf("redislock: acquire %q: %w", key, ctx.Err())
		}
	}
}

// leave removes waiter from key's queue, in the background (an unreachable server
// drops it when its liveness key expires).
func (s *session) leave(key, waiter string) {
	s.background(func(ctx context.Context) error {
		return s.b.runChecked(ctx, "leave", key, false, leaveScript, []string{s.b.QueueKey(key), s.b.TokenKey()}, waiter, s.b.waiterPrefix()).Err()
	})
}

// abandon makes sure the grant request head, whose outcome is unknown, leaves no grant
// and no queue entry, in the background (see the package doc).
func (s *session) abandon(key, head, waiter string) {
	s.background(func(ctx context.Context) error {
		return s.b.runChecked(ctx, "abandon", key, false, abandonScript,
			[]string{s.b.LockKey(key), s.b.abandonedKey(head), s.b.QueueKey(key), s.b.TokenKey()},
			head, s.ttlMillis, waiter, s.b.waiterPrefix()).Err()
	})
}

// background runs f until it succeeds, with backoff, for at most one TTL (by then what
// it cleans up has expired) or until Close.
func (s *session) background(f func(ctx context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.bg, time.Duration(s.ttlMillis)*time.Millisecond)
		defer cancel()
		backendutil.Retry(ctx, time.Second, 10*time.Millisecond, time.Second, f)
	}()
}
