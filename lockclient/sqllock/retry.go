package sqllock

import (
	"context"
	"time"
)

// A grant waits for the key's row lock before it takes the table-wide lock (the advisory
// lock on PostgreSQL, the counter row on MySQL), never while holding it. When it cannot
// (the key's row appeared, locked by another transaction, between the two steps), the
// routine gives up with nothing done and the session calls it again.

// retryable reports whether err says that the grant routine rolled back having changed
// nothing that matters, so that calling it again at once is safe and is the way on:
// PostgreSQL lock_not_available (55P03, the NOWAIT lock of a key's row under the
// advisory lock) and MySQL ER_LOCK_DEADLOCK (1213, a lock-order cycle with a client of
// an earlier release, whose grant takes the counter before the key's row).
func retryable(err error) bool {
	if state, ok := pgState(err); ok {
		return state == "55P03"
	}
	return isMySQLErr(err, 1213)
}

// grantRetryPause is the pause before a retryable grant call is repeated: the row
// lock that made it give up is then usually gone (the next call waits for it outside
// the table-wide lock anyway).
const grantRetryPause = time.Millisecond

// retryGrant runs call until it returns an error that is not retryable, or ctx ends
// (then the last error).
func retryGrant(ctx context.Context, call func() error) error {
	for {
		err := call()
		if err == nil || !retryable(err) {
			return err
		}
		t := time.NewTimer(grantRetryPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
