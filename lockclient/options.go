package lockclient

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// Option configures a Client.
type Option func(*config)

type config struct {
	ttl        time.Duration
	renewEvery time.Duration
	margin     time.Duration
	retryBase  time.Duration
	retryMax   time.Duration
	owner      string
	logger     *slog.Logger
	meter      metric.MeterProvider
	marginSet  bool
	renewEvSet bool
}

// DefaultTTL is the lease time-to-live used when WithTTL is not given.
const DefaultTTL = 10 * time.Second

func defaultConfig() config {
	return config{
		ttl:       DefaultTTL,
		retryBase: 20 * time.Millisecond,
		retryMax:  time.Second,
		logger:    slog.New(slog.DiscardHandler),
	}
}

func (c *config) finish() {
	if c.ttl <= 0 {
		c.ttl = DefaultTTL
	}
	if !c.renewEvSet || c.renewEvery <= 0 || c.renewEvery >= c.ttl {
		c.renewEvery = c.ttl / 3
	}
	if !c.marginSet || c.margin < 0 || c.margin >= c.ttl {
		c.margin = c.ttl / 10
	}
	if c.retryBase <= 0 {
		c.retryBase = 20 * time.Millisecond
	}
	if c.retryMax < c.retryBase {
		c.retryMax = c.retryBase
	}
	if c.owner == "" {
		c.owner = defaultOwner()
	}
}

// WithTTL sets the lease time-to-live (default DefaultTTL). The service expires a lease
// that was not renewed for this long.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithRenewInterval sets how often the watchdog renews each held lease (default TTL/3).
func WithRenewInterval(d time.Duration) Option {
	return func(c *config) { c.renewEvery, c.renewEvSet = d, true }
}

// WithSafetyMargin sets how much earlier than the service the client gives up on a lease
// whose renewals fail (default TTL/10). It must cover the rate difference between the
// client's and the service's clocks over one TTL; a larger margin only makes the client
// declare leases lost sooner.
func WithSafetyMargin(d time.Duration) Option {
	return func(c *config) { c.margin, c.marginSet = d, true }
}

// WithRetry sets the jittered exponential backoff Acquire uses while the service is
// unreachable: the first wait is up to base, doubling up to max (defaults 20ms, 1s).
func WithRetry(base, max time.Duration) Option {
	return func(c *config) { c.retryBase, c.retryMax = base, max }
}

// WithOwner names this client at the lock service (default: host name, process id and
// a random suffix). Two clients with the same owner are still distinct holders.
func WithOwner(owner string) Option { return func(c *config) { c.owner = owner } }

// WithLogger sets the structured logger (default: discard). Lost leases and an
// unreachable service are logged at Warn; nothing about keys' values is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}
