package lockclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// onlyBackend hides every optional interface of the backend it wraps.
type onlyBackend struct{ lockclient.Backend }

// Client.Retire retires the lock service (red-team rt37c F4): the Client's own later
// grants and another Client's fail at once with ErrRetired (an ErrInvalidConfig, not
// retried as unavailability), RaiseFloor fails, LastToken answers the last token; a
// backend that cannot be retired answers ErrNoRetire and changes nothing.
func TestClientRetire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc := memlock.New()
	c := lockclient.New(svc)
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	last, err := c.Retire(ctx)
	if err != nil || last < l.Token() {
		t.Fatalf("Retire = %d, %v; want at least token %d", last, err, l.Token())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("releasing a lease granted before the retirement: %v", err)
	}
	other := lockclient.New(svc)
	defer other.Close(context.Background())
	for _, cl := range []*lockclient.Client{c, other} {
		if _, err := cl.Acquire(ctx, "k"); !errors.Is(err, lockclient.ErrRetired) || !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
			t.Fatalf("Acquire after Retire: %v, want ErrRetired (ErrInvalidConfig)", err)
		}
	}
	if err := c.RaiseFloor(ctx, last+10); !errors.Is(err, lockclient.ErrRetired) {
		t.Fatalf("RaiseFloor after Retire: %v, want ErrRetired", err)
	}
	if got, err := c.LastToken(ctx); err != nil || got != last {
		t.Fatalf("LastToken after Retire = %d, %v; want %d", got, err, last)
	}

	plain := lockclient.New(onlyBackend{memlock.New()})
	defer plain.Close(context.Background())
	if _, err := plain.Retire(ctx); !errors.Is(err, lockclient.ErrNoRetire) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Retire on a backend without Retirer: %v, want ErrNoRetire", err)
	}
	if l, err := plain.Acquire(ctx, "k"); err != nil {
		t.Fatalf("Acquire after a refused Retire: %v", err)
	} else {
		_ = l.Release(ctx)
	}
}
