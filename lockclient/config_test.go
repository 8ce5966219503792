package lockclient_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/metrictest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// NewChecked returns at construction the error that New records: a *ConfigError whose
// text names the option and the value; the Client it returns fails Acquire and
// TryAcquire with the same error, at once.
func TestNewCheckedReportsInvalidOptions(t *testing.T) {
	cases := []struct {
		name   string
		option string
		value  string // must appear in the error text
		opts   []lockclient.Option
	}{
		{"zero TTL", "WithTTL", "0s", []lockclient.Option{lockclient.WithTTL(0)}},
		{"negative TTL", "WithTTL", "-1s", []lockclient.Option{lockclient.WithTTL(-time.Second)}},
		{"TTL too short for a renewal", "WithTTL", "2ns", []lockclient.Option{lockclient.WithTTL(2)}},
		{"zero renew interval", "WithRenewInterval", "0s", []lockclient.Option{lockclient.WithRenewInterval(0)}},
		{"renew interval = TTL", "WithRenewInterval", "1s", []lockclient.Option{
			lockclient.WithTTL(time.Second), lockclient.WithRenewInterval(time.Second)}},
		{"renew interval > TTL", "WithRenewInterval", "2s", []lockclient.Option{
			lockclient.WithTTL(time.Second), lockclient.WithRenewInterval(2 * time.Second)}},
		{"renew interval = TTL - margin", "WithRenewInterval", "900ms", []lockclient.Option{
			lockclient.WithTTL(time.Second), lockclient.WithSafetyMargin(100 * time.Millisecond),
			lockclient.WithRenewInterval(900 * time.Millisecond)}},
		{"negative margin", "WithSafetyMargin", "-1ms", []lockclient.Option{lockclient.WithSafetyMargin(-time.Millisecond)}},
		{"margin = TTL", "WithSafetyMargin", "1s", []lockclient.Option{
			lockclient.WithTTL(time.Second), lockclient.WithSafetyMargin(time.Second)}},
		{"margin leaves no room for the default renewal", "WithSafetyMargin", "700ms", []lockclient.Option{
			lockclient.WithTTL(time.Second), lockclient.WithSafetyMargin(700 * time.Millisecond)}},
		{"zero retry base", "WithRetry", "base 0s", []lockclient.Option{lockclient.WithRetry(0, time.Second)}},
		{"retry max below base", "WithRetry", "max 1ms", []lockclient.Option{lockclient.WithRetry(time.Second, time.Millisecond)}},
		{"empty owner", "WithOwner", "empty", []lockclient.Option{lockclient.WithOwner("")}},
	}
	svc := memlock.New()
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mr := metrictest.New(t)
			c, err := lockclient.NewChecked(svc, append(tc.opts, lockclient.WithMeterProvider(mr))...)
			if c == nil {
				t.Fatal("NewChecked returned no Client")
			}
			defer c.Close(ctx)
			checkConfigErr(t, "NewChecked", err, tc.option, tc.value)
			start := time.Now()
			_, aerr := c.Acquire(ctx, "k")
			checkConfigErr(t, "Acquire", aerr, tc.option, tc.value)
			_, terr := c.TryAcquire(ctx, "k")
			checkConfigErr(t, "TryAcquire", terr, tc.option, tc.value)
			if d := time.Since(start); d > 100*time.Millisecond {
				t.Fatalf("Acquire and TryAcquire took %v: want at once", d)
			}
			if _, _, held := svc.Holder("k"); held {
				t.Fatal("a misconfigured client took the lock")
			}
			// Counted as invalid_config, not as unavailable.
			if got := mr.Sum(t, lockclient.MetricAcquireDuration, lockclient.AttrOutcome.String("invalid_config")); got != 2 {
				t.Fatalf("invalid_config outcomes = %d, want 2", got)
			}
			if got := mr.Sum(t, lockclient.MetricAcquireDuration, lockclient.AttrOutcome.String("unavailable")); got != 0 {
				t.Fatalf("unavailable outcomes = %d, want 0", got)
			}
		})
	}
}

func checkConfigErr(t *testing.T, what string, err error, option, value string) {
	t.Helper()
	if !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("%s = %v, want ErrInvalidConfig", what, err)
	}
	if errors.Is(err, lockclient.ErrUnavailable) || errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("%s error %v is also ErrUnavailable or ErrHeld", what, err)
	}
	var ce *lockclient.ConfigError
	if !errors.As(err, &ce) || ce.Option != option {
		t.Fatalf("%s error %v: want a *ConfigError of %s", what, err, option)
	}
	if !strings.Contains(err.Error(), option) || !strings.Contains(err.Error(), value) {
		t.Fatalf("%s error %q does not name the option %s and the value %s", what, err, option, value)
	}
}

// Valid options: NewChecked returns no error.
func TestNewCheckedAcceptsValidOptions(t *testing.T) {
	c, err := lockclient.NewChecked(memlock.New(), lockclient.WithTTL(time.Second), lockclient.WithSafetyMargin(0),
		lockclient.WithRenewInterval(999*time.Millisecond), lockclient.WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	l, err := c.TryAcquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	l.Release(context.Background())
}

// A nil Backend is a configuration error, not a panic at the first Acquire.
func TestNilBackend(t *testing.T) {
	c, err := lockclient.NewChecked(nil)
	checkConfigErr(t, "NewChecked(nil)", err, "New", "nil")
	defer c.Close(context.Background())
	_, err = lockclient.New(nil).TryAcquire(context.Background(), "k")
	checkConfigErr(t, "TryAcquire", err, "New", "nil")
}

// checkedBackend records an invalid option of its own (like etcdlock.New).
type checkedBackend struct {
	lockclient.Backend
	err    error
	opened int
}

func (b *checkedBackend) CheckConfig() error { return b.err }

func (b *checkedBackend) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	b.opened++
	return b.Backend.Open(ctx, owner, ttl)
}

// A backend's own configuration error (ConfigChecker) is reported by NewChecked and by
// every Acquire, without opening a session; an error that does not wrap
// ErrInvalidConfig is made to.
func TestBackendConfigChecker(t *testing.T) {
	ctx := context.Background()
	for _, berr := range []error{
		fmt.Errorf("somelock: %w: WithThing: got -1", lockclient.ErrInvalidConfig),
		errors.New("somelock: WithThing: got -1"),
	} {
		b := &checkedBackend{Backend: memlock.New(), err: berr}
		c, err := lockclient.NewChecked(b)
		if !errors.Is(err, lockclient.ErrInvalidConfig) || !strings.Contains(err.Error(), "WithThing: got -1") {
			t.Fatalf("NewChecked = %v, want the backend's error wrapping ErrInvalidConfig", err)
		}
		for _, call := range []func() (*lockclient.Lease, error){
			func() (*lockclient.Lease, error) { return c.Acquire(ctx, "k") },
			func() (*lockclient.Lease, error) { return c.TryAcquire(ctx, "k") },
		} {
			if _, err := call(); !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
				t.Fatalf("Acquire = %v, want ErrInvalidConfig only", err)
			}
		}
		if b.opened != 0 {
			t.Fatalf("the backend was opened %d times", b.opened)
		}
		c.Close(ctx)
	}
	// Without an error the backend works.
	b := &checkedBackend{Backend: memlock.New()}
	c, err := lockclient.NewChecked(b)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	l, err := c.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
}

// erringBackend answers Open with a configuration error of the service (like redislock
// on an evicting Redis, or a missing sqllock table found at the first grant).
type erringBackend struct{ opened int }

func (b *erringBackend) Open(context.Context, string, time.Duration) (lockclient.Session, error) {
	b.opened++
	return nil, fmt.Errorf("somelock: the service is set up wrongly: %w", lockclient.ErrInvalidConfig)
}

// A service that answers ErrInvalidConfig ends Acquire at once (not at the deadline,
// not as ErrUnavailable), after one attempt.
func TestServiceConfigErrorNotRetried(t *testing.T) {
	b := &erringBackend{}
	mr := metrictest.New(t)
	c := lockclient.New(b, lockclient.WithMeterProvider(mr))
	defer c.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Acquire(ctx, "k")
	if !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("Acquire = %v, want ErrInvalidConfig only", err)
	}
	if d := time.Since(start); d > time.Second || b.opened != 1 {
		t.Fatalf("Acquire took %v and %d attempts: want one, at once", d, b.opened)
	}
	if got := mr.Sum(t, lockclient.MetricAcquireDuration, lockclient.AttrOutcome.String("invalid_config")); got != 1 {
		t.Fatalf("invalid_config outcomes = %d, want 1", got)
	}
}
