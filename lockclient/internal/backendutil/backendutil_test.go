package backendutil

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

func TestCleanOwner(t *testing.T) {
	if got := CleanOwner("a\xffb"); got != "a?b" {
		t.Fatalf("CleanOwner of invalid UTF-8 = %q", got)
	}
	long := strings.Repeat("x", MaxOwnerLen-1) + "é" // the rune straddles the limit
	if got := CleanOwner(long); got != strings.Repeat("x", MaxOwnerLen-1) {
		t.Fatalf("CleanOwner cut %q", got[MaxOwnerLen-3:])
	}
}

func TestCeilUnitsRoundsUp(t *testing.T) {
	if got := CeilUnits(1500*time.Microsecond, time.Millisecond); got != 2 {
		t.Fatalf("CeilUnits = %d, want 2", got)
	}
	if got := CeilUnits(2*time.Millisecond, time.Millisecond); got != 2 {
		t.Fatalf("CeilUnits = %d, want 2", got)
	}
}

func TestPollBoundsAndDelay(t *testing.T) {
	if lo, hi := PollBounds(0, 0); lo != DefaultPollMin || hi != DefaultPollMin {
		t.Fatalf("PollBounds(0, 0) = %v, %v", lo, hi)
	}
	for range 100 {
		if d := PollDelay(time.Millisecond, 2*time.Millisecond); d < time.Millisecond || d > 2*time.Millisecond {
			t.Fatalf("PollDelay = %v", d)
		}
	}
}

func TestUnavailable(t *testing.T) {
	cause := errors.New("cause")
	err := Unavailable("x", "op", "k", cause)
	if !errors.Is(err, lockclient.ErrUnavailable) || !errors.Is(err, cause) || err.Error() != `x: op "k": lockclient: lock service unavailable: cause` {
		t.Fatalf("Unavailable = %v", err)
	}
}
