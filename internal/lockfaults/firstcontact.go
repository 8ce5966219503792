package lockfaults

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// FirstContactStalled checks a client whose service was stalled before the client ever
// reached it (the caller paused its connection first): the backend's first Open — its
// checks of the service, its identity, its token seed — runs inside the first call.
// Acquire, TryAcquire, Acquire again and then Close must each answer within deadline
// (+ slack), the first three with an error wrapping ErrUnavailable or the context's
// deadline: a stalled first contact neither hangs past the caller's context nor
// reports an untyped error.
func FirstContactStalled(t *testing.T, c *lockclient.Client, deadline, slack time.Duration) {
	t.Helper()
	for _, call := range []struct {
		name string
		fn   func(context.Context, string) (*lockclient.Lease, error)
	}{{"Acquire", c.Acquire}, {"TryAcquire", c.TryAcquire}, {"Acquire", c.Acquire}} {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		_, err := call.fn(ctx, "k")
		took := time.Since(start)
		cancel()
		if took > deadline+slack {
			t.Errorf("%s under a stalled service took %v with a %v deadline", call.name, took, deadline)
		}
		if !errors.Is(err, lockclient.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s under a stalled service: %v, want ErrUnavailable or the deadline", call.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	_ = c.Close(ctx)
	if took := time.Since(start); took > deadline+slack {
		t.Errorf("Close under a stalled service took %v with a %v deadline", took, deadline)
	}
}
