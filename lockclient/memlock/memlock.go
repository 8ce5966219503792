// Package memlock is an in-process lock service: the embedded default backend of
// lockclient and the one fast tests and the fault drill run on.
//
// A Service judges expiry on its own clock, exactly like a remote lock service: a grant
// or renewal is valid for the session's TTL from the moment the Service handles the
// request. Tokens come from one counter shared by all keys, which RaiseFloor and
// WithMinToken raise (lockclient.FloorRaiser) up to 2^63−2, like the other backends' floors;
// it lives as long as the Service: a process that restarts counts from 1 again, below the
// tokens its previous run stamped on rows, and is refused them (ErrFenced in the
// wrapper). Worse, the tokens the previous run granted but that did not write yet are
// above every token the database holds, so a restart that only starts above those
// (WithMinToken at fencedsql/schema.MaxToken) hands them out again, and a holder of the
// previous run that was paused, partitioned or still running (a deploy's overlap) then
// writes beside the new run's holder of the same token, or over its rows. A single
// instance that restarts therefore starts its Service with WithRestartSeed and
// WithMinToken at schema.MaxToken (above the rows; WithRestartSeed puts it above the
// earlier run's grants too: at the clock, or RestartMargin above the floor when the floor
// is above the clock) and, where the guards read a token floor, raises the
// database's floor to its LastToken + 1 before the first lease (schema.RaiseTokenFloor:
// every lease of an earlier run is then refused). Because a restart starts above every
// token in the database, a process still configured for memlock after the deployment
// switched to another lock service would, restarting so, start above that service and
// fence its holders out: reconfigure every process before it can restart (README,
// "Switching or rebuilding the lock service"). The last token is 2^63−1: a grant after it fails at
// once with an error wrapping lockclient.ErrInvalidConfig. Retire (lockclient.Retirer)
// makes every later grant fail with lockclient.ErrRetired. Several lockclient.Clients
// may share one Service; each opens its own session and behaves like a separate process.
//
// # Fair handoff
//
// Sessions implement lockclient.QueueSession: the waiters of a key queue in arrival
// order, and a release (or the holder's expiry, noticed at that moment by the first
// waiter's timer) hands the key directly to the first waiter, waking it alone. Its token
// is drawn at the handoff, so tokens follow grant order across keys. TryAcquire never
// barges in: a key with waiters is never free. A waiter whose context ends leaves the
// queue at once; if the key was handed to it in that instant, the grant is released
// (owner-checked) and passed on. The service promises strict FIFO among the waiters of
// one key; a request either takes effect before its call returns or not at all (there is
// no network to hold it), so a cancelled TryAcquire leaves no grant behind.
//
// For tests it injects faults deterministically, per owner: Pause holds a client's
// requests until Resume (a stalled process whose renewals arrive late), Partition drops
// them until Heal (a black-holed network: calls end with ErrUnavailable when their
// context does), and Advance moves the service clock forward.
package memlock

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// Service is an in-process lock service. The zero value is not usable; call New.
type Service struct {
	id       string // the identity of its token counter (ServiceID), set by New
	shared   bool   // grants hang on their session's lease (WithSessionLeases)
	mu       sync.Mutex
	offset   time.Duration // added to time.Now by Advance
	seq      uint64        // last token issued
	retired  bool          // Retire: every later grant and raise fails with ErrRetired
	nextSess uint64
	locks    map[string]*entry
	queues   map[string][]*waiter // waiters per key, in arrival order
	faults   map[string]*fault    // by owner
	renewals uint64
	cfgErr   error // an invalid option value (CheckConfig)
}

// Option configures a Service.
type Option func(*config)

type config struct {
	sessionLeases bool
	minToken      uint64
	restartSeed   bool
	err           error
}

// maxFloor is the highest floor RaiseFloor and WithMinToken accept, the same as
// redislock's (the largest BIGINT or Redis integer less one). The counter never goes
// past 2^63−1: a grant that finds it there fails with an error wrapping
// lockclient.ErrInvalidConfig (grantLocked), so it never hands out a token no guarded
// BIGINT column can hold, and never wraps to 0.
const maxFloor = math.MaxInt64 - 1

// WithSessionLeases makes every grant hang on its session's single lease, the way etcd
// does: sessions implement lockclient.SessionRenewer, one renewal keeps all of a
// client's locks alive, and when the session lease expires every grant of it ends. A
// later grant gives the session a new lease; if a grant of the expired one could still
// be trusted by the client (the service's clock ran ahead: Advance), the session's next
// RenewSession fails with ErrLeaseLost, as etcdlock's does, so the client loses that
// grant instead of extending it.
func WithSessionLeases() Option { return func(c *config) { c.sessionLeases = true } }

// WithMinToken starts the service with its token floor at n: every token it issues is
// greater than n, as after RaiseFloor(ctx, n). n above 2^63−2 is invalid: the Service
// then records an error wrapping lockclient.ErrInvalidConfig, which CheckConfig, Open
// and RaiseFloor return. Given more than once, the highest n counts: floors only go
// up, so options assembled from defaults and overrides (WithMinToken(M), later
// WithMinToken(0)) never lower it (red-team rt62c).
func WithMinToken(n uint64) Option {
	return func(c *config) {
		if n > maxFloor {
			c.err = fmt.Errorf("memlock: %w: WithMinToken: the floor must be at most %d, got %d", lockclient.ErrInvalidConfig, uint64(maxFloor), n)
			return
		}
		c.minToken = max(c.minToken, n) // floors only go up
	}
}

// RestartMargin is how far above its floor (WithMinToken) a service started with
// WithRestartSeed begins when that floor is at or above the clock: 2^40. Such a restart
// begins above the database's highest token (schema.MaxToken: the rows, tombstones and
// floors — the floor the previous run's start raised included) by this much, so above
// every token the previous run granted unless it granted more than 2^40 tokens
// (ten thousand a second for three years) after its start. Each such restart uses 2^40
// of the 2^63 tokens: about eight million restarts.
const RestartMargin uint64 = 1 << 40

// WithRestartSeed starts the service's counter where a process that restarts by the
// procedure of the package doc issues tokens above every token its earlier runs
// issued, granted and unwritten ones too:
//
//   - at the wall clock in microseconds since 1970 (about 1.8·10^15 in 2026) when the
//     floor (WithMinToken, at schema.MaxToken) is below it: the clock separates the
//     runs, as long as each issued fewer tokens than the microseconds between its start
//     and the next one's and the clock was not set back by more than that — with or
//     without a database floor, and the tokens stay near the clock;
//   - at the floor plus RestartMargin when the floor is at or above the clock (a switch
//     from Redis or etcd leaves it 2^52 above: red-team rt63a F1). The clock separates
//     nothing there; the floor the procedure raises at each start does, since MaxToken
//     then counts it: without the guards' floor, a run that granted tokens and wrote none
//     leaves MaxToken where it was, and the next run starts where it started (red-team
//     rt64a F1). A floor above the clock therefore needs the database floor.
//
// A floor above the clock and within RestartMargin of the last token 2^63−1 leaves no
// room: the Service then records an error wrapping lockclient.ErrInvalidConfig, as an
// invalid WithMinToken does. It changes nothing after New: tokens still count up by one
// per grant.
func WithRestartSeed() Option { return func(c *config) { c.restartSeed = true } }

// New returns an empty lock service.
func New(opts ...Option) *Service {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	seq := cfg.minToken
	if cfg.restartSeed && cfg.err == nil {
		switch now := uint64(time.Now().UnixMicro()); {
		case seq < now:
			seq = now
		case seq > maxFloor-RestartMargin:
			cfg.err = fmt.Errorf("memlock: %w: WithRestartSeed: the floor %d, above the clock, leaves less than RestartMargin (%d) below the last token", lockclient.ErrInvalidConfig, seq, RestartMargin)
		default:
			seq += RestartMargin
		}
	}
	return &Service{id: newServiceID(), shared: cfg.sessionLeases, seq: seq, cfgErr: cfg.err, locks: make(map[string]*entry), queues: make(map[string][]*waiter),
		faults: make(map[string]*fault)}
}

var _ lockclient.ConfigChecker = (*Service)(nil)

// CheckConfig implements lockclient.ConfigChecker: the error New recorded for an invalid
// option value (wrapping lockclient.ErrInvalidConfig), or nil.
func (s *Service) CheckConfig() error { return s.cfgErr }

func (s *Service) now() time.Time { return time.Now().Add(s.offset) }

// Open implements lockclient.Backend.
func (s *Service) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	if s.cfgErr != nil {
		return nil, s.cfgErr
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("memlock: %w: ttl must be positive, got %v", lockclient.ErrInvalidConfig, ttl)
	}
	if err := s.gate(ctx, owner); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextSess++
	ss := &session{svc: s, id: s.nextSess, owner: owner, ttl: ttl, expires: s.now().Add(ttl)}
	if s.shared {
		return &sharedSession{ss}, nil
	}
	return ss, nil
}

// Holder reports who holds key now, by the service's clock.
func (s *Service) Holder(key string) (owner string, token uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.live(key)
	if e == nil {
		return "", 0, false
	}
	return e.owner, e.token, true
}

var _ lockclient.FloorRaiser = (*Service)(nil)

// RaiseFloor implements lockclient.FloorRaiser: every token issued after it returns is
// greater than min. The floor and the token counter are one number (the last token
// issued, or the floor when higher), raised only upward under the service's lock, so a
// raise is atomic against grants. It lasts as long as the Service. A min above 2^63−2
// (which would leave the counter no room to grow) yields an error wrapping
// lockclient.ErrInvalidConfig and raises nothing, as does a Service with an invalid
// option; it fails for no other reason.
func (s *Service) RaiseFloor(ctx context.Context, min uint64) error {
	if s.cfgErr != nil {
		return s.cfgErr
	}
	if min > maxFloor {
		return fmt.Errorf("memlock: raise floor: %w: the floor must be at most %d, got %d", lockclient.ErrInvalidConfig, uint64(maxFloor), min)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retired {
		return fmt.Errorf("memlock: raise floor: %w", lockclient.ErrRetired)
	}
	s.seq = max(s.seq, min)
	return nil
}

var _ lockclient.Retirer = (*Service)(nil)

// Retire implements lockclient.Retirer: under the service's lock, every later grant
// (and every waiter's handoff) fails with an error wrapping lockclient.ErrRetired, and
// so does RaiseFloor; it returns the last token issued, which LastToken keeps
// answering. Leases granted before keep their renewals and releases until they end.
// It never fails.
func (s *Service) Retire(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retired = true
	return s.seq, nil
}

var _ lockclient.RetirementReader = (*Service)(nil)

// Retired implements lockclient.RetirementReader: whether Retire was called, and then
// the last token it answered (which LastToken keeps answering). It never fails.
func (s *Service) Retired(ctx context.Context) (uint64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.retired {
		return 0, false, nil
	}
	return s.seq, true, nil
}

// LastToken implements lockclient.FloorRaiser: the last fencing token the service
// issued, or its floor when higher. It never fails.
func (s *Service) LastToken(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq, nil
}

// Renewals returns how many renewal requests the service has handled.
func (s *Service) Renewals() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewals
}

// Advance moves the service's clock forward by d, expiring the grants that d outlives.
func (s *Service) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offset += d
	for key, e := range s.locks {
		close(e.changed)
		e.changed = make(chan struct{})
		s.live(key) // expire it, handing the key to its first waiter
	}
}
