package lockclient

import (
	"context"
	"fmt"
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
	ownerSet   bool
	health     func(context.Context) error
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

// finish validates the options and fills in the defaults. It returns a *ConfigError for
// the first invalid value; the config is then completed with defaults so that the
// Client is still well-formed (its Acquire and TryAcquire return the error).
func (c *config) finish() error {
	var err error
	fail := func(option, format string, args ...any) {
		if err == nil {
			err = &ConfigError{Option: option, Msg: fmt.Sprintf(format, args...)}
		}
	}
	if c.ttl <= 0 {
		fail("WithTTL", "the TTL must be positive, got %v", c.ttl)
		c.ttl = DefaultTTL
	}
	if !c.marginSet {
		c.margin = c.ttl / 10
	} else if c.margin < 0 || c.margin >= c.ttl {
		fail("WithSafetyMargin", "the safety margin must be at least 0 and less than the TTL %v, got %v", c.ttl, c.margin)
		c.margin = c.ttl / 10
	}
	if !c.renewEvSet {
		c.renewEvery = c.ttl / 3
		if c.renewEvery <= 0 {
			fail("WithTTL", "the TTL %v is too short: its default renewal interval (TTL/3) is 0", c.ttl)
			c.renewEvery = 1
		} else if c.renewEvery >= c.ttl-c.margin {
			fail("WithSafetyMargin", "the safety margin %v leaves less than the default renewal interval (TTL/3 = %v) before the local deadline", c.margin, c.renewEvery)
		}
	} else if c.renewEvery <= 0 || c.renewEvery >= c.ttl-c.margin {
		fail("WithRenewInterval", "the renewal interval must be positive and less than the TTL minus the safety margin (%v - %v), got %v", c.ttl, c.margin, c.renewEvery)
		c.renewEvery = c.ttl / 3
	}
	if c.retryBase <= 0 || c.retryMax < c.retryBase {
		fail("WithRetry", "the backoff must have 0 < base <= max, got base %v, max %v", c.retryBase, c.retryMax)
		c.retryBase, c.retryMax = 20*time.Millisecond, time.Second
	}
	if c.ownerSet && c.owner == "" {
		fail("WithOwner", "the owner must not be empty")
	}
	if c.owner == "" {
		c.owner = defaultOwner()
	}
	return err
}

// WithTTL sets the lease time-to-live (default DefaultTTL). The service expires a lease
// that was not renewed for this long. A TTL of zero or less, or one so short that its
// default renewal interval (TTL/3) is zero, is invalid: NewChecked returns a
// *ConfigError (errors.Is ErrInvalidConfig), and Acquire and TryAcquire fail with it.
// (Each option below reports its invalid values the same way.)
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithRenewInterval sets how often the watchdog renews each held lease (default TTL/3).
// It must be positive and shorter than the TTL minus the safety margin (otherwise a
// lease would reach its local deadline before its first renewal): an invalid interval
// makes Acquire and TryAcquire fail with a *ConfigError (errors.Is ErrInvalidConfig).
func WithRenewInterval(d time.Duration) Option {
	return func(c *config) { c.renewEvery, c.renewEvSet = d, true }
}

// WithSafetyMargin sets how much earlier than the service the client gives up on a lease
// whose renewals fail (default TTL/10). It must cover the rate difference between the
// client's and the service's clocks over one TTL; a larger margin only makes the client
// declare leases lost sooner. It must be at least 0 and less than the TTL, and leave room
// for the renewal interval (see WithRenewInterval): an invalid margin makes Acquire and
// TryAcquire fail with a *ConfigError (errors.Is ErrInvalidConfig).
func WithSafetyMargin(d time.Duration) Option {
	return func(c *config) { c.margin, c.marginSet = d, true }
}

// WithRetry sets the jittered exponential backoff Acquire uses while the service is
// unreachable: the first wait is up to base, doubling up to max (defaults 20ms, 1s).
// It requires 0 < base <= max: other values make Acquire and TryAcquire fail with a
// *ConfigError (errors.Is ErrInvalidConfig).
func WithRetry(base, max time.Duration) Option {
	return func(c *config) { c.retryBase, c.retryMax = base, max }
}

// WithOwner names this client at the lock service (default: host name, process id and
// a random suffix). Two clients with the same owner are still distinct holders. An empty
// owner is invalid: Acquire and TryAcquire then fail with a *ConfigError (errors.Is
// ErrInvalidConfig).
func WithOwner(owner string) Option { return func(c *config) { c.owner, c.ownerSet = owner, true } }

// WithLogger sets the structured logger (default: discard — the package never logs
// through slog's default logger or package log). Lost leases and an unreachable service
// are logged at Warn; nothing about keys' values is logged. A nil logger is valid and
// means the default. Backends log through a logger of their own, given to their
// constructor (sqllock.WithLogger, redislock.WithLogger), also discarded by default.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithHealthCheck makes the watchdog renew only while the application reports itself
// healthy (G12 in docs/design.md). Before each renewal (of a lease, or of the session
// lease of a backend with one, such as etcd) the watchdog calls check; an error, or no
// answer before its context ends, means "unhealthy": that renewal is not sent. The
// check's context ends at the earliest local deadline of the leases the renewal would
// extend, and at most half a renewal interval after the call; a check that ignores its
// context is abandoned then (it keeps running, the watchdog does not wait for it).
//
// While the check fails, the watchdog asks again every quarter renewal interval and
// renews as soon as it passes. A lease that reaches its local deadline without a renewal
// is declared lost (Lost closed, Err wrapping ErrLeaseLost and saying "unhealthy") before
// the service can expire it, and the client then frees the key at the service
// (owner-checked), so that a healthy replica takes over at once. Refused checks count in
// the metric lockclient.renewals with lock.outcome "unhealthy", and leases lost that way
// in lockclient.leases.lost with lock.cause "unhealthy".
//
// Renewals that run at the same time share one call of check. A nil check means none
// (the default): every renewal is sent.
func WithHealthCheck(check func(ctx context.Context) error) Option {
	return func(c *config) { c.health = check }
}
