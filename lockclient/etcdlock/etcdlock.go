package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/lockclient"
)

// DefaultPrefix is the etcd key prefix under which locks live unless WithPrefix is given.
const DefaultPrefix = "/fencedsql/locks/"

// DefaultRequestTimeout bounds each etcd request unless WithRequestTimeout is given.
const DefaultRequestTimeout = 5 * time.Second

// Option configures the backend.
type Option func(*config)

type config struct {
	prefix         string
	requestTimeout time.Duration
	slack          time.Duration
	minToken       uint64 // WithMinToken
	err            error  // the first invalid option value, wrapping lockclient.ErrInvalidConfig
}

// invalid records the first invalid option value.
func (c *config) invalid(option, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("etcdlock: %w: %s: %s", lockclient.ErrInvalidConfig, option, fmt.Sprintf(format, args...))
	}
}

// DefaultLeaseSlack is how much longer than the client's TTL the etcd session lease is
// granted by default.
const DefaultLeaseSlack = time.Second

// WithLeaseSlack grants the etcd session lease this much longer than the client's TTL
// (default DefaultLeaseSlack). A grant must live a full TTL from its request, so a
// TryAcquire on a session lease with less than a TTL left renews it in parallel; the
// slack lets grants within that long of the last renewal skip the extra keep-alive.
// The cost: a crashed holder's locks are freed that much later. Safety is unaffected:
// the client gives up at its own TTL, etcd only ever expires later (G7 in
// docs/design.md). A negative slack is invalid (see New).
func WithLeaseSlack(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("WithLeaseSlack", "the slack must be at least 0, got %v", d)
			return
		}
		c.slack = d
	}
}

// WithPrefix sets the etcd key prefix of every lock (default DefaultPrefix). It is used as
// given: end it with "/" to keep the locks in their own directory. Clients that must
// exclude each other have to use the same prefix. An empty prefix is invalid (see New):
// it would put the locks among every other key of the cluster.
func WithPrefix(p string) Option {
	return func(c *config) {
		if p == "" {
			c.invalid("WithPrefix", "the prefix must not be empty (the default is %q)", DefaultPrefix)
			return
		}
		c.prefix = p
	}
}

// WithRequestTimeout bounds every single etcd request the backend makes (default
// DefaultRequestTimeout), whatever the caller's context allows: a request through a cut
// connection then fails with an error wrapping lockclient.ErrUnavailable instead of
// hanging. The caller's earlier deadline still applies. Zero or less means no bound
// beyond the caller's context. Waiting for a held lock (a watch) is not bounded.
func WithRequestTimeout(d time.Duration) Option { return func(c *config) { c.requestTimeout = d } }

// New returns a Backend over an existing etcd client. The client is not closed by the
// backend; close it after the lockclient.Client that uses the backend.
//
// New does not fail: a nil client or an invalid option value (a negative WithLeaseSlack,
// an empty WithPrefix) is recorded as an error wrapping lockclient.ErrInvalidConfig,
// naming the option and the value, which CheckConfig and Open return. lockclient.New
// and lockclient.NewChecked call CheckConfig, so a Client over such a backend fails
// every Acquire at once (and NewChecked returns the error).
func New(cli *clientv3.Client, opts ...Option) *Backend {
	cfg := config{prefix: DefaultPrefix, requestTimeout: DefaultRequestTimeout, slack: DefaultLeaseSlack}
	if cli == nil {
		cfg.invalid("New", "the *clientv3.Client is nil")
	}
	for _, o := range opts {
		o(&cfg)
	}
	return &Backend{cli: cli, cfg: cfg}
}

// CheckConfig implements lockclient.ConfigChecker: the error New recorded for a nil
// client or an invalid option value (wrapping lockclient.ErrInvalidConfig), or nil.
func (b *Backend) CheckConfig() error { return b.cfg.err }

// Backend is a lockclient.Backend over etcd. It is safe for concurrent use, and several
// lockclient.Clients may share it: each opens its own session.
type Backend struct {
	cli *clientv3.Client
	cfg config

	floorMu     sync.Mutex
	floorRaised bool // WithMinToken was applied

	idMu sync.Mutex
	id   string // the identity of the token source (serviceID), "" until read

	// leaveHook, set by tests only (before Open), runs in leave's background clean-up
	// just before (done false) and after (done true) the delete of an abandoned queue key.
	leaveHook func(ekey string, done bool)
}

var (
	_ lockclient.Backend       = (*Backend)(nil)
	_ lockclient.ConfigChecker = (*Backend)(nil)
)

// Open implements lockclient.Backend: it grants the session's etcd lease, with ttl
// rounded up to whole seconds (see the package documentation). The first Open applies
// WithMinToken and reads the service's identity (serviceid.go: one round trip, once per
// Backend).
func (b *Backend) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	if b.cfg.err != nil {
		return nil, b.cfg.err
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("etcdlock: %w: ttl must be positive, got %v", lockclient.ErrInvalidConfig, ttl)
	}
	if err := b.raiseMinToken(ctx); err != nil {
		return nil, err
	}
	sid, err := b.serviceID(ctx)
	if err != nil {
		return nil, err
	}
	s := newSession(b, owner, ttl)
	s.serviceID = sid
	if err := s.grant(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// leaseSeconds is ttl rounded up to whole seconds, at least 1.
func leaseSeconds(ttl time.Duration) int64 {
	return max(1, int64((ttl+time.Second-1)/time.Second))
}

// lockPrefix is the key prefix of the lock named key. PathEscape escapes "/" and "%", so
// the escaped name has no "/" and no lock's prefix is a prefix of another's.
func (b *Backend) lockPrefix(key string) string {
	return b.cfg.prefix + url.PathEscape(key) + "/"
}

func lockKey(lockPfx string, lease clientv3.LeaseID) string {
	return fmt.Sprintf("%s%x", lockPfx, int64(lease))
}

// requestContext derives the context of one etcd request from ctx: bounded by the request
// timeout (WithRequestTimeout) as well as by ctx.
func (b *Backend) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.cfg.requestTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, b.cfg.requestTimeout)
}

// isLeaseNotFound reports whether etcd answered that the lease does not exist (expired
// or revoked).
func isLeaseNotFound(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound)
}

// unavailable wraps an error whose outcome is unknown: lockclient.ErrUnavailable, the
// cause, and ctx's error if it ended and the cause does not already say so.
func unavailable(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("etcdlock: %s: %w: %w (%w)", op, lockclient.ErrUnavailable, err, cerr)
	}
	return fmt.Errorf("etcdlock: %s: %w: %w", op, lockclient.ErrUnavailable, err)
}
