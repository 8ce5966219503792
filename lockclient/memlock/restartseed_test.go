package memlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestWithRestartSeed: a service started with WithRestartSeed issues its first token
// above both the clock in microseconds at its start and its floor plus RestartMargin
// (red-team rt63a F1: a floor above the clock, left by a switch from Redis or etcd, made
// the clock no separation); a later run's tokens are above an earlier run's; a floor
// within the margin of the last token is a configuration error; without the option the
// counter starts at the floor.
func TestWithRestartSeed(t *testing.T) {
	ctx := context.Background()
	first := func(svc *memlock.Service) uint64 {
		t.Helper()
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
	run1 := memlock.New(memlock.WithRestartSeed())
	tok1 := first(run1)
	if tok1 <= before {
		t.Errorf("first token %d; want above the clock at the start, %d", tok1, before)
	}
	for i := 0; i < 100; i++ {
		tok1 = first(run1)
	}
	time.Sleep(time.Millisecond)
	if tok2 := first(memlock.New(memlock.WithRestartSeed())); tok2 <= tok1 {
		t.Errorf("a later run's first token %d; want above the earlier run's last, %d", tok2, tok1)
	}
	// A floor below the clock that does not move between runs (no database floor, the
	// earlier run wrote nothing: red-team rt64a F1): the clock separates them.
	fixed := uint64(time.Now().UnixMicro()) - 1_000_000
	run3 := memlock.New(memlock.WithRestartSeed(), memlock.WithMinToken(fixed))
	var tok3 uint64
	for i := 0; i < 3; i++ {
		tok3 = first(run3)
	}
	time.Sleep(time.Millisecond)
	if tok4 := first(memlock.New(memlock.WithRestartSeed(), memlock.WithMinToken(fixed))); tok4 <= tok3 {
		t.Errorf("a later run over the same floor below the clock: first token %d; want above the earlier run's last, %d", tok4, tok3)
	}
	// A floor above the clock (a switch from Redis or etcd): the margin separates runs.
	high := uint64(1) << 62
	if tok := first(memlock.New(memlock.WithRestartSeed(), memlock.WithMinToken(high))); tok != high+memlock.RestartMargin+1 {
		t.Errorf("WithMinToken(2^62) with the restart seed: first token %d; want %d", tok, high+memlock.RestartMargin+1)
	}
	bad := memlock.New(memlock.WithRestartSeed(), memlock.WithMinToken(1<<63-1-memlock.RestartMargin))
	if err := bad.CheckConfig(); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Errorf("a floor within RestartMargin of the last token: CheckConfig %v; want ErrInvalidConfig", err)
	}
	if tok := first(memlock.New(memlock.WithMinToken(7))); tok != 8 {
		t.Errorf("without the restart seed: first token %d; want 8", tok)
	}
}
