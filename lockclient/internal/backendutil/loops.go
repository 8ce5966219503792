package backendutil

import (
	"context"
	"time"
)

// WaitFree is the polling loop of a backend's Session.Wait. check reports whether the
// key is free (no holder, or a lease that is over) and otherwise the holder's remaining
// lease (0 when unknown). WaitFree re-checks after delay(), never sleeping past the
// remaining lease plus AfterExpiry. It returns nil once the key is free, ctx.Err() when
// ctx ends (also when check failed because of it), and check's error otherwise.
func WaitFree(ctx context.Context, delay func() time.Duration, check func(ctx context.Context) (free bool, remaining time.Duration, err error)) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		free, remaining, err := check(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		case free:
			return nil
		}
		d := delay()
		if remaining > 0 {
			d = min(d, remaining+AfterExpiry())
		}
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Retry runs f until it returns nil or ctx ends: each attempt under a timeout of
// attempt, the pauses between attempts doubling from first up to max. Backends run
// their background clean-ups with it.
func Retry(ctx context.Context, attempt, first, max time.Duration, f func(ctx context.Context) error) {
	backoff := first
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := f(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, max)
	}
}
