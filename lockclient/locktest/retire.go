package locktest

import (
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// testRetire checks lockclient.Retirer, for backends that implement it (skipped
// otherwise; part of RunFloor): Retire answers a bound of every token granted before,
// and afterwards no grant takes effect — a new key, a key granted again, a waiter that
// was queued before and is handed the key after, a Client started afterwards — each
// failing with an error wrapping ErrRetired and ErrInvalidConfig; RaiseFloor fails with
// ErrRetired; LastToken and a second Retire answer the same bound; a lease granted
// before is still released normally (red-team rt37c F4). A backend that also implements
// lockclient.RetirementReader answers Retired with (0, false) before and with the
// retirement's last token and true after (red-team rt42c F6).
func testRetire(t *testing.T, h Harness) {
	e := newEnv(t, h)
	ctx := ctxT(t, 60*time.Second)
	f := e.floorOf("retire-admin")
	r, ok := f.(lockclient.Retirer)
	if !ok {
		t.Skipf("the backend %T does not implement lockclient.Retirer", f)
	}
	rr, reads := f.(lockclient.RetirementReader)
	a, b := e.client(), e.client()
	before := Grant(t, ctx, a, "k")
	if reads {
		if last, retired, err := rr.Retired(ctx); err != nil || retired || last != 0 {
			t.Errorf("Retired before Retire = %d, %v, %v; want 0, false, nil", last, retired, err)
		}
	}
	held, err := a.Acquire(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		lw, err := b.Acquire(ctx, "q")
		if err == nil {
			t.Errorf("a waiter queued before the retirement was granted token %d after it", lw.Token())
			lw.Release(ctx)
		}
		waited <- err
	}()
	time.Sleep(h.arrivalGap())
	last, err := r.Retire(ctx)
	if err != nil {
		t.Fatalf("Retire: %v", err)
	}
	if last < held.Token() || last < before {
		t.Fatalf("Retire answered %d, below tokens %d and %d granted before it", last, before, held.Token())
	}
	if err := held.Release(ctx); err != nil {
		t.Fatalf("releasing a lease granted before the retirement: %v", err)
	}
	retired := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, lockclient.ErrRetired) || !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Errorf("%s after Retire: %v, want an error wrapping ErrRetired and ErrInvalidConfig", what, err)
		}
	}
	retired("the waiter queued before", <-waited)
	_, err = a.Acquire(ctx, "k")
	retired("the key granted again", err)
	_, err = a.TryAcquire(ctx, "new")
	retired("TryAcquire of a new key", err)
	_, err = e.client().Acquire(ctx, "other")
	retired("a Client started afterwards", err)
	retired("RaiseFloor", f.RaiseFloor(ctx, last+1000*noise))
	if got := lastToken(t, ctx, f); got != last {
		t.Errorf("LastToken after Retire = %d, want the retirement's %d", got, last)
	}
	if again, err := r.Retire(ctx); err != nil || again != last {
		t.Errorf("Retire again = %d, %v, want %d", again, err, last)
	}
	if reads {
		if got, retired, err := rr.Retired(ctx); err != nil || !retired || got != last {
			t.Errorf("Retired after Retire = %d, %v, %v; want %d, true, nil", got, retired, err, last)
		}
		if got := lastToken(t, ctx, f); got != last {
			t.Errorf("LastToken after Retired = %d, want the retirement's %d", got, last)
		}
	}
}
