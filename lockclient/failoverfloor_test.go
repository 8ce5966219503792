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
