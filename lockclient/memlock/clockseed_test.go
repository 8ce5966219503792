package memlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestWithClockSeed: a service started with WithClockSeed issues its first token above
// the clock in microseconds at its start, so a second service started later issues
// tokens above every token the first issued (fewer than one a microsecond); a
// WithMinToken floor above the clock wins; without the option the counter starts at
// the floor.
func TestWithClockSeed(t *testing.T) {
	ctx := context.Background()
	first := func(svc *memlock.Service) uint64 {
		c := lockclient.New(svc, lockclient.WithTTL(time.Second))
		defer c.Close(ctx) //nolint:errcheck
		l, err := c.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx) //nolint:errcheck
		return l.Token()
	}
	before := uint64(time.Now().UnixMicro())
	run1 := memlock.New(memlock.WithClockSeed())
	tok1 := first(run1)
	if tok1 <= before {
		t.Errorf("first token %d; want above the clock at the start, %d", tok1, before)
	}
	for i := 0; i < 100; i++ {
		tok1 = first(run1)
	}
	time.Sleep(time.Millisecond)
	if tok2 := first(memlock.New(memlock.WithClockSeed())); tok2 <= tok1 {
		t.Errorf("a later run's first token %d; want above the earlier run's last, %d", tok2, tok1)
	}
	high := uint64(1) << 62
	if tok := first(memlock.New(memlock.WithClockSeed(), memlock.WithMinToken(high))); tok != high+1 {
		t.Errorf("WithMinToken(2^62) with the clock seed: first token %d; want %d", tok, high+1)
	}
	if tok := first(memlock.New(memlock.WithMinToken(7))); tok != 8 {
		t.Errorf("without the clock seed: first token %d; want 8", tok)
	}
}
