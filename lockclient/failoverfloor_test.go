package lockclient_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// AdvanceFloor (the failover hook's lockfloor -failover, red-team rt42f F1) raises the
// service's own floor to its last token + the margin and answers at least that: the
// service's next grant is above every token a lagging token source forgot. Margin 0 is
// LastToken alone; a last token + margin above 2^63-2 (no database floor above it) is
// refused with ErrInvalidConfig before anything is raised.
func TestAdvanceFloorJumpsTheServiceAndTheAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc := memlock.New(memlock.WithMinToken(41))
	c := lockclient.New(svc, lockclient.WithTTL(time.Second))
	defer c.Close(context.Background())
	if got, err := lockclient.AdvanceFloor(ctx, svc, 0); err != nil || got != 41 {
		t.Fatalf("margin 0: %d, %v; want LastToken 41", got, err)
	}
	got, err := lockclient.AdvanceFloor(ctx, svc, lockclient.DefaultFailoverMargin)
	if err != nil || got < 41+lockclient.DefaultFailoverMargin {
		t.Fatalf("default margin: %d, %v; want at least %d", got, err, 41+lockclient.DefaultFailoverMargin)
	}
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() <= got {
		t.Fatalf("the next grant is token %d, not above the answer %d", l.Token(), got)
	}
	_ = l.Release(ctx)

	top := memlock.New(memlock.WithMinToken(math.MaxInt64 - 10))
	for _, margin := range []uint64{10, lockclient.DefaultFailoverMargin, math.MaxUint64} {
		if _, err := lockclient.AdvanceFloor(ctx, top, margin); !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Errorf("last token 2^63-11, margin %d: %v; want ErrInvalidConfig", margin, err)
		}
	}
	if last, err := top.LastToken(ctx); err != nil || last != math.MaxInt64-10 {
		t.Errorf("after the refusals LastToken = %d, %v; want 2^63-11 (nothing raised)", last, err)
	}
	if got, err := lockclient.AdvanceFloor(ctx, top, 9); err != nil || got != math.MaxInt64-1 {
		t.Errorf("margin 9 to 2^63-2: %d, %v", got, err)
	}
}

// AdvanceFloorAbove (red-team rt59c F2) jumps from the higher of the service's last
// token and the caller's lower bound — the guarded database's highest token, a
// switch's recorded answer — so a raise the service's token source forgot (a restore,
// an asynchronous failover) is jumped over, margin included; a bound at or below the
// last token is AdvanceFloor; margin 0 with a bound above raises to the bound.
func TestAdvanceFloorAboveJumpsFromTheLowerBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const bound = 1 << 52
	svc := memlock.New(memlock.WithMinToken(41))
	got, err := lockclient.AdvanceFloorAbove(ctx, svc, bound, lockclient.DefaultFailoverMargin)
	if err != nil || got < bound+lockclient.DefaultFailoverMargin {
		t.Fatalf("bound 2^52 above last token 41: %d, %v; want at least 2^52 + the margin", got, err)
	}
	c := lockclient.New(svc, lockclient.WithTTL(time.Second))
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() <= got {
		t.Fatalf("the next grant is token %d, not above the answer %d", l.Token(), got)
	}
	_ = l.Release(ctx)
	// A bound below the last token: the margin above the last token, as AdvanceFloor.
	before, _ := svc.LastToken(ctx)
	if got, err := lockclient.AdvanceFloorAbove(ctx, svc, 7, 1000); err != nil || got < before+1000 || got > before+1000+10 {
		t.Fatalf("bound 7 below last token %d, margin 1000: %d, %v", before, got, err)
	}
	// Margin 0: the bound alone, or nothing raised.
	zero := memlock.New(memlock.WithMinToken(41))
	if got, err := lockclient.AdvanceFloorAbove(ctx, zero, 40, 0); err != nil || got != 41 {
		t.Fatalf("margin 0, bound 40 below 41: %d, %v; want 41 (nothing raised)", got, err)
	}
	if got, err := lockclient.AdvanceFloorAbove(ctx, zero, 500, 0); err != nil || got != 500 {
		t.Fatalf("margin 0, bound 500: %d, %v; want 500", got, err)
	}
	// A bound near the end of the token range: refused before anything is raised.
	if _, err := lockclient.AdvanceFloorAbove(ctx, zero, math.MaxInt64-5, 10); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("bound 2^63-6, margin 10: %v; want ErrInvalidConfig", err)
	}
	if _, err := lockclient.AdvanceFloorAbove(ctx, zero, math.MaxUint64, 0); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("bound 2^64-1, margin 0: %v; want ErrInvalidConfig", err)
	}
	if last, err := zero.LastToken(ctx); err != nil || last != 500 {
		t.Fatalf("after the refusals LastToken = %d, %v; want 500 (nothing raised)", last, err)
	}
}
