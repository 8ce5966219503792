package lockclient_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Invalid option values are reported, not replaced: New records a *ConfigError and
// Acquire and TryAcquire return it, without contacting the service.
func TestInvalidOptionsAreReported(t *testing.T) {
	cases := []struct {
		name   string
		option string
		opts   []lockclient.Option
	}{
		{"zero TTL", "WithTTL", []lockclient.Option{lockclient.WithTTL(0)}},
		{"negative TTL", "WithTTL", []lockclient.Option{lockclient.WithTTL(-time.Second)}},
		{"zero renew interval", "WithRenewInterval", []lockclient.Option{lockclient.WithRenewInterval(0)}},
		{"renew interval = TTL", "WithRenewInterval", []lockclient.Option{
			lockclient.WithTTL(time.Second), lockclient.WithRenewInterval(time.Second)}},
		{"renew interval = TTL - margin", "WithRenewInterval", []lockclient.Option{
			lockclient.WithTTL(time.Second), lockclient.WithSafetyMargin(100 * time.Millisecond),
			lockclient.WithRenewInterval(900 * time.Millisecond)}},
		{"renew interval past TTL - default margin", "WithRenewInterval", []lockclient.Option{
			lockclient.WithTTL(time.Second), lockclient.WithRenewInterval(950 * time.Millisecond)}},
		{"negative margin", "WithSafetyMargin", []lockclient.Option{lockclient.WithSafetyMargin(-time.Millisecond)}},
		{"margin = TTL", "WithSafetyMargin", []lockclient.Option{
			lockclient.WithTTL(time.Second), lockclient.WithSafetyMargin(time.Second)}},
		{"margin leaves no room for the default renewal", "WithSafetyMargin", []lockclient.Option{
			lockclient.WithTTL(time.Second), lockclient.WithSafetyMargin(700 * time.Millisecond)}},
		{"zero retry base", "WithRetry", []lockclient.Option{lockclient.WithRetry(0, time.Second)}},
		{"retry max below base", "WithRetry", []lockclient.Option{lockclient.WithRetry(time.Second, time.Millisecond)}},
		{"empty owner", "WithOwner", []lockclient.Option{lockclient.WithOwner("")}},
	}
	svc := memlock.New()
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := lockclient.New(svc, tc.opts...)
			defer c.Close(ctx)
			for name, call := range map[string]func() (*lockclient.Lease, error){
				"Acquire":    func() (*lockclient.Lease, error) { return c.Acquire(ctx, "k") },
				"TryAcquire": func() (*lockclient.Lease, error) { return c.TryAcquire(ctx, "k") },
			} {
				l, err := call()
				if l != nil || !errors.Is(err, lockclient.ErrInvalidConfig) {
					t.Fatalf("%s = %v, %v; want ErrInvalidConfig", name, l, err)
				}
				var ce *lockclient.ConfigError
				if !errors.As(err, &ce) || ce.Option != tc.option {
					t.Fatalf("%s error %v: want a *ConfigError of %s", name, err, tc.option)
				}
				if errors.Is(err, lockclient.ErrUnavailable) || errors.Is(err, lockclient.ErrHeld) {
					t.Fatalf("%s error %v is also ErrUnavailable or ErrHeld", name, err)
				}
			}
			if _, _, held := svc.Holder("k"); held {
				t.Fatal("a misconfigured client took the lock")
			}
		})
	}
}

// Valid edge values are accepted as given.
func TestValidOptionsAreAccepted(t *testing.T) {
	svc := memlock.New()
	ctx := context.Background()
	c := lockclient.New(svc, lockclient.WithTTL(time.Second), lockclient.WithSafetyMargin(0),
		lockclient.WithRenewInterval(999*time.Millisecond), lockclient.WithRetry(time.Millisecond, time.Millisecond),
		lockclient.WithOwner("o"), lockclient.WithLogger(nil), lockclient.WithMeterProvider(nil))
	defer c.Close(ctx)
	if c.TTL() != time.Second || c.Owner() != "o" {
		t.Fatalf("TTL %v owner %q", c.TTL(), c.Owner())
	}
	l, err := c.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// New starts no goroutine; the watchdog starts with the first grant and stops at Close.
func TestNewStartsNoGoroutine(t *testing.T) {
	svc := memlock.New()
	ctx := context.Background()
	goleak.VerifyNone(t)
	before := runtime.NumGoroutine()
	c := lockclient.New(svc)
	goleak.VerifyNone(t)
	if _, err := c.TryAcquire(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	other := lockclient.New(svc)
	if _, err := other.TryAcquire(ctx, "held"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire = %v, want ErrHeld", err)
	}
	if n := runtime.NumGoroutine(); n != before+1 {
		t.Fatalf("%d goroutines after one of two clients took a lock, %d before: want one watchdog", n, before)
	}
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t)
}
