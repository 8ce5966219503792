package sqllock

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/internal/backendutil"
)

// Dialect names the SQL dialect of the database that holds the lease table.
type Dialect int

const (
	// Detect means: find the dialect from the *sql.DB's driver (pgx or
	// go-sql-driver/mysql). It is the zero value.
	Detect Dialect = iota
	// Postgres is PostgreSQL (10 or later; tested with 15).
	Postgres
	// MySQL is MySQL (5.7 or later) or MariaDB (tested with 10.11): InnoDB, stored
	// procedures, DATETIME(6).
	MySQL
)

// String returns "postgres", "mysql" or "detect".
func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case MySQL:
		return "mysql"
	case Detect:
		return "detect"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// DefaultTable is the lease table's name when WithTable is not given.
const DefaultTable = "fencedsql_locks"

// MaxKeyLen is the longest lock key, in bytes, the lease table stores. On PostgreSQL a
// key must also be valid UTF-8 without NUL bytes (it is stored as text).
const MaxKeyLen = 512

// Defaults of WithPollInterval.
const (
	// DefaultPollMin is the shortest poll interval of Wait.
	DefaultPollMin = backendutil.DefaultPollMin
	// DefaultPollMax is the longest poll interval of Wait.
	DefaultPollMax = backendutil.DefaultPollMax
)

// Option configures New.
type Option func(*config)

type config struct {
	dialect          Dialect
	table            string
	pollMin, pollMax time.Duration
	polling          bool
}

// WithDialect sets the dialect instead of detecting it from the driver (needed when the
// *sql.DB uses another driver or a wrapper around pgx or go-sql-driver/mysql).
func WithDialect(d Dialect) Option { return func(c *config) { c.dialect = d } }

// WithTable sets the lease table's name (default DefaultTable): letters, digits and
// '_', optionally qualified by a schema (PostgreSQL) or database (MySQL) as
// "schema.table", at most 48 characters per part (the names of the token sequence,
// counter and procedure are derived from it).
func WithTable(name string) Option { return func(c *config) { c.table = name } }

// WithPollInterval sets the bounds of the jittered poll interval with which waiters
// re-check a held key when they cannot listen for notifications (MySQL, WithPolling,
// or while the PostgreSQL listening connection is down). Defaults: 20ms and 200ms. The
// first waiters in line poll every 1–2 minimums, those further back less often, never
// more than one maximum apart (see the package doc); the first never sleeps past the
// holder's remaining lease (plus a little jitter).
func WithPollInterval(min, max time.Duration) Option {
	return func(c *config) { c.pollMin, c.pollMax = min, max }
}

// WithPolling makes waiters poll on PostgreSQL too, instead of LISTENing on a dedicated
// connection: for connection poolers that do not support LISTEN (PgBouncer in
// transaction mode), or drivers other than pgx. The queue is the same; releases still
// notify the next waiter, which may belong to a Backend that listens.
func WithPolling() Option { return func(c *config) { c.polling = true } }

// Backend is a lockclient.Backend over a lease table. It is safe for concurrent use,
// and several lockclient.Clients may share it: each opens its own session.
type Backend struct {
	db      *sql.DB
	dialect Dialect
	table   tableName
	q       queries
	pollMin time.Duration
	pollMax time.Duration
	lis     *listener // PostgreSQL LISTEN support; nil when polling

	// legacyUntil (unix nanoseconds): until then the backend uses the statements of
	// schema version 1 (no queue), because a version 2 object was missing; see legacy.
	legacyUntil atomic.Int64
	legacyWarn  sync.Once

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt // MySQL: prepared once per *sql.DB, see stmt
}

var _ lockclient.Backend = (*Backend)(nil)

// New returns a Backend that keeps leases in the lease table of db. The table must
// exist (see CreateTable); New does not touch the database. The dialect is detected from
// db.Driver() (pgx's stdlib driver, go-sql-driver/mysql, or either wrapped by fencedsql:
// "fenced-pgx" pools LISTEN too) unless WithDialect is given.
func New(db *sql.DB, opts ...Option) (*Backend, error) {
	if db == nil {
		return nil, errors.New("sqllock: nil *sql.DB")
	}
	cfg := config{table: DefaultTable, pollMin: DefaultPollMin, pollMax: DefaultPollMax}
	for _, o := range opts {
		o(&cfg)
	}
	isPgx := false
	switch fencedsql.UnwrapDriver(db.Driver()).(type) { // fenced-pgx, fenced-mysql: the driver they wrap
	case *stdlib.Driver:
		isPgx = true
		if cfg.dialect == Detect {
			cfg.dialect = Postgres
		}
	case *mysql.MySQLDriver, mysql.MySQLDriver:
		if cfg.dialect == Detect {
			cfg.dialect = MySQL
		}
	}
	if cfg.dialect != Postgres && cfg.dialect != MySQL {
		return nil, fmt.Errorf("sqllock: cannot detect the dialect of driver %T: use WithDialect", db.Driver())
	}
	tn, err := parseTable(cfg.table)
	if err != nil {
		return nil, err
	}
	cfg.pollMin, cfg.pollMax = backendutil.PollBounds(cfg.pollMin, cfg.pollMax)
	b := &Backend{db: db, dialect: cfg.dialect, table: tn, q: buildQueries(cfg.dialect, tn),
		pollMin: cfg.pollMin, pollMax: cfg.pollMax}
	if cfg.dialect == Postgres && isPgx && !cfg.polling {
		var ch [12]byte
		if _, err := crand.Read(ch[:]); err != nil {
			return nil, fmt.Errorf("sqllock: channel name: %w", err)
		}
		b.lis = newListener(db, "fencedsql_sqllock_"+hex.EncodeToString(ch[:]))
	}
	return b, nil
}

// Dialect returns the backend's SQL dialect.
func (b *Backend) Dialect() Dialect { return b.dialect }

// Table returns the lease table's name as given to WithTable.
func (b *Backend) Table() string { return b.table.String() }

// Open implements lockclient.Backend. It does not touch the database: the session is a
// random id that identifies this client's rows in the lease table.
func (b *Backend) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("sqllock: ttl must be positive, got %v", ttl)
	}
	var id [16]byte
	if _, err := crand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("sqllock: session id: %w", err)
	}
	us := backendutil.CeilUnits(ttl, time.Microsecond)
	bg, stop := context.WithCancel(context.Background())
	closing, closeWaiters := context.WithCancel(context.Background())
	s := &session{b: b, id: hex.EncodeToString(id[:]), owner: cleanOwner(owner), ttlMicros: us, bg: bg, stop: stop,
		closing: closing, closeWaiters: closeWaiters}
	if b.lis != nil {
		b.lis.addSession()
	}
	return s, nil
}

type session struct {
	b         *Backend
	id        string
	owner     string
	ttlMicros int64
	closed    atomic.Bool

	bg   context.Context // parent of background clean-ups; cancelled at the end of Close
	stop context.CancelFunc
	// closing ends every waiting AcquireQueued when Close begins.
	closing      context.Context
	closeWaiters context.CancelFunc
	mu           sync.Mutex     // guards wg.Add against Close
	wg           sync.WaitGroup // running TryAcquire/AcquireQueued calls and background clean-ups
}

var _ lockclient.QueueSession = (*session)(nil)

// grantSession is the session_id a grant request stores: the session id and an id of
// the request, so that the grant of one abandoned request can be found and deleted
// without touching the session's other grants. Renew and Release match it exactly. A
// waiting AcquireQueued uses it as its waiter id too.
func (s *session) grantSession(g lockclient.Grant) string {
	if v, ok := g.Data.(string); ok && v != "" {
		return v
	}
	return s.id // a grant that is not this backend's: matches no row
}

// newRequest returns the id of a new grant request: "<session>:<request>".
func (s *session) newRequest() (string, error) {
	var req [8]byte
	if _, err := crand.Read(req[:]); err != nil {
		return "", fmt.Errorf("sqllock: request id: %w", err)
	}
	return s.id + ":" + hex.EncodeToString(req[:]), nil
}

// enter registers a TryAcquire or AcquireQueued call, so that Close waits for it and for
// the clean-ups it starts; false once the session is closed.
func (s *session) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.wg.Add(1)
	return true
}

// grantState is the answer of the grant routine (schema version 2).
type grantState struct {
	token    int64 // > 0: granted; 0: not now; -1: the request was abandoned or left the queue
	ahead    int64 // live waiters ahead of the caller in the key's queue
	holderUS int64 // the holder's remaining lease in µs, by the server's clock (0: free)
	aheadUS  int64 // the longest remaining liveness among the waiters ahead, µs
	holder   int64 // the holder's token (0: free)
}

// grant runs the grant routine for request gs: as a waiter that joins or stays in the
// key's queue (queue), or as a TryAcquire that only takes a free key nobody waits for.
func (s *session) grant(ctx context.Context, key, gs string, queue bool, channel string) (grantState, error) {
	var q int64
	if queue {
		q = 1
	}
	args := []any{key, s.owner, s.id, gs, s.ttlMicros, q}
	if s.b.dialect == Postgres {
		args = append(args, channel)
	}
	var st grantState
	err := s.b.scanRow(ctx, s.b.q.grant2, args, &st.token, &st.ahead, &st.holderUS, &st.aheadUS, &st.holder)
	return st, err
}

func (s *session) TryAcquire(ctx context.Context, key string) (lockclient.Grant, error) {
	if err := s.b.checkKey(key); err != nil {
		return lockclient.Grant{}, err
	}
	entered := s.enter()
	if entered {
		defer s.wg.Done()
	}
	gs, err := s.newRequest()
	if err != nil {
		return lockclient.Grant{}, err
	}
	if s.b.legacy() {
		return s.tryAcquireV1(ctx, key, gs, entered)
	}
	st, err := s.grant(ctx, key, gs, false, "")
	switch {
	case err != nil && s.b.missingV2(err):
		return s.tryAcquireV1(ctx, key, gs, entered)
	case err != nil:
		if entered {
			s.abandon(key, gs) // the request may still reach the server
		}
		return lockclient.Grant{}, unavailable("try-acquire", key, err)
	case st.token == 0:
		return lockclient.Grant{}, lockclient.ErrHeld
	case st.token < 0:
		return lockclient.Grant{}, unavailable("try-acquire", key, errors.New("the request was marked abandoned"))
	}
	return lockclient.Grant{Key: key, Token: uint64(st.token), Data: gs}, nil
}

// tryAcquireV1 is TryAcquire with the statements of schema version 1 (no queue).
func (s *session) tryAcquireV1(ctx context.Context, key, gs string, entered bool) (lockclient.Grant, error) {
	// PostgreSQL returns no row when the key is held; MySQL's procedure returns 0.
	var tok int64
	err := s.b.scanRow(ctx, s.b.q.grant, []any{key, s.owner, gs, s.ttlMicros}, &tok)
	if errors.Is(err, sql.ErrNoRows) && s.b.dialect == Postgres || err == nil && tok == 0 {
		return lockclient.Grant{}, lockclient.ErrHeld
	}
	if err != nil {
		if entered {
			s.abandonV1(key, gs) // the request may still reach the server
		}
		return lockclient.Grant{}, unavailable("try-acquire", key, err)
	}
	if tok <= 0 {
		return lockclient.Grant{}, unavailable("try-acquire", key, fmt.Errorf("invalid token %d from the server", tok))
	}
	return lockclient.Grant{Key: key, Token: uint64(tok), Data: gs}, nil
}

// AcquireQueued implements lockclient.QueueSession: a FIFO queue per key in the waiter
// table (see the package doc).
func (s *session) AcquireQueued(ctx context.Context, key string) (lockclient.Grant, time.Time, error) {
	if err := s.b.checkKey(key); err != nil {
		return lockclient.Grant{}, time.Time{}, err
	}
	if !s.enter() {
		return lockclient.Grant{}, time.Time{}, fmt.Errorf("sqllock: acquire %q: %w", key, lockclient.ErrClosed)
	}
	defer s.wg.Done()
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	ended := func(err error) error {
		switch {
		case parent.Err() != nil:
			return fmt.Errorf("sqllock: acquire %q: %w", key, parent.Err())
		case s.closing.Err() != nil:
			return fmt.Errorf("sqllock: acquire %q: %w", key, lockclient.ErrClosed)
		}
		return unavailable("acquire", key, err)
	}
	// failed: a statement failed (the service may be unreachable): ErrUnavailable, and
	// the context's error too if it ended.
	failed := func(err error) error {
		if ce := parent.Err(); ce != nil && !errors.Is(err, ce) {
			err = fmt.Errorf("%w (%w)", err, ce)
		}
		return unavailable("acquire", key, err)
	}
	gs, err := s.newRequest()
	if err != nil {
		return lockclient.Grant{}, time.Time{}, err
	}
	if s.b.legacy() {
		return s.acquireV1(ctx, key, ended, failed)
	}
	var notified <-chan struct{}
	var channel string
	var sub *subscription
	if s.b.lis != nil {
		sub = s.b.lis.subscribe(gs)
		defer s.b.lis.unsubscribe(sub)
		notified, channel = sub.ch, s.b.lis.channel
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	p := poller{fast: s.b.pollMin, holder: -1}
	for {
		// Read before the call: if the listener was LISTENing then, a notification sent
		// after the call's check reaches us.
		listening := sub != nil && s.b.lis.listening()
		sent := time.Now()
		st, err := s.grant(ctx, key, gs, true, channel)
		switch {
		case err != nil && s.b.missingV2(err):
			return s.acquireV1(ctx, key, ended, failed)
		case err != nil:
			s.abandon(key, gs) // unknown outcome: it may still grant or queue
			return lockclient.Grant{}, time.Time{}, failed(err)
		case st.token > 0:
			return lockclient.Grant{Key: key, Token: uint64(st.token), Data: gs}, sent, nil
		case st.token < 0:
			// Our waiter row lapsed and was collected (we did not refresh it within a
			// TTL): the Client retries, joining the queue again at its end.
			return lockclient.Grant{}, time.Time{}, unavailable("acquire", key, errors.New("the waiter lapsed and left the queue"))
		}
		timer.Reset(s.queueDelay(st, listening, &p))
		select {
		case <-notified:
		case <-timer.C:
		case <-ctx.Done():
			s.leave(key, gs) // our last call answered: no grant of ours is in flight
			return lockclient.Grant{}, time.Time{}, ended(ctx.Err())
		}
	}
}

// poller is the polling state of one waiter: backoff while nothing moves (the same
// holder keeps the key and the waiter's place in line is the same).
type poller struct {
	fast   time.Duration
	holder int64
	ahead  int64
}

// queueDelay is how long a waiter sleeps before its next call, given the answer of the
// last one. Every waiter calls at least every TTL/4, which refreshes its liveness in
// time; the first waiter also wakes just after the holder's lease ends, and every
// waiter just after the liveness of all those ahead of it ends (they died). A waiter
// that listens is woken by notifications otherwise. One that polls (MySQL,
// WithPolling, listener down) polls by its place r in line: every 1–2 × max(poll
// minimum, r × poll minimum / 2), at most every half to one poll maximum (the first
// three in line every 20–40ms by default, the tenth every 100–200ms), doubling the
// interval up to that bound while neither the holder nor its place changes.
func (s *session) queueDelay(st grantState, listening bool, p *poller) time.Duration {
	b := s.b
	d := time.Duration(s.ttlMicros) * time.Microsecond / 4
	switch {
	case st.ahead == 0 && st.holderUS > 0:
		d = min(d, time.Duration(st.holderUS)*time.Microsecond+backendutil.AfterExpiry())
	case st.ahead == 0:
		d = min(d, backendutil.PollDelay(0, b.pollMin)) // free, yet not granted: a race
	case st.aheadUS > 0:
		d = min(d, time.Duration(st.aheadUS)*time.Microsecond+backendutil.AfterExpiry())
	}
	if listening {
		if st.ahead == 0 {
			d = min(d, 5*b.pollMax) // in case the listening connection silently stalls
		}
		return d
	}
	// Polling: the interval grows with the place in line (the queue moves one place
	// per handoff) and doubles while nothing moves, up to the poll maximum.
	cap := max(b.pollMin, b.pollMax/2)
	base := min(max(b.pollMin, time.Duration(st.ahead)*b.pollMin/2), cap)
	if st.holder != p.holder || st.ahead != p.ahead {
		p.fast, p.holder, p.ahead = base, st.holder, st.ahead
	} else {
		p.fast = min(2*p.fast, cap)
	}
	return min(d, p.fast+backendutil.PollDelay(0, p.fast))
}

// acquireV1 is AcquireQueued with the statements of schema version 1: TryAcquire and
// Wait in turn, no queue.
func (s *session) acquireV1(ctx context.Context, key string, ended, failed func(error) error) (lockclient.Grant, time.Time, error) {
	for {
		gs, err := s.newRequest()
		if err != nil {
			return lockclient.Grant{}, time.Time{}, err
		}
		sent := time.Now()
		g, err := s.tryAcquireV1(ctx, key, gs, true)
		switch {
		case err == nil:
			return g, sent, nil
		case !errors.Is(err, lockclient.ErrHeld):
			return lockclient.Grant{}, time.Time{}, failed(err)
		}
		if err := s.Wait(ctx, key); err != nil {
			if ctx.Err() != nil {
				return lockclient.Grant{}, time.Time{}, ended(err)
			}
			return lockclient.Grant{}, time.Time{}, failed(err)
		}
	}
}

// Clean-ups in the background.
const (
	cleanupFirst = 20 * time.Millisecond
	cleanupMax   = time.Second
)

// errNotYet makes background repeat a clean-up that found nothing to do yet.
var errNotYet = errors.New("sqllock: nothing deleted yet")

// background runs f until it returns nil, with backoff (20ms doubling to 1s), for up
// to two TTLs or until Close ends. Its callers have entered (so Close waits for it).
func (s *session) background(f func(ctx context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.bg, 2*time.Duration(s.ttlMicros)*time.Microsecond)
		defer cancel()
		backoff := cleanupFirst
		for {
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			err := f(rctx)
			rcancel()
			if err == nil {
				return
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			backoff = min(2*backoff, cleanupMax)
		}
	}()
}

// leave removes the waiter gs from key's queue, in the background (a waiter whose
// removal never reaches the server lapses after its TTL). On PostgreSQL it wakes the
// next waiter if the key is free.
func (s *session) leave(key, gs string) {
	s.background(func(ctx context.Context) error {
		if s.b.dialect == Postgres {
			var n int64
			return s.b.scanRow(ctx, s.b.q.leave2, []any{key, gs}, &n)
		}
		_, err := s.b.exec(ctx, s.b.q.leave2, gs)
		return err
	})
}

// abandonKeep is how long the mark of an abandoned request is kept (beyond two TTLs):
// a request delivered later than that may still leave a grant, which expires after
// its TTL, or a waiter, which lapses after its TTL.
const abandonKeep = time.Minute

// abandon makes sure the request gs, whose outcome is unknown (timeout, cut connection,
// ended context), leaves nothing, in the background: it marks the request gone in the
// waiter table (the grant routine refuses a marked request, so one that reaches the
// server later grants and queues nothing), then deletes the grant the request may have
// got (owner-checked by gs), waking the next waiter. The mark comes first and grants
// lock the request's mark, so no grant slips in between (see ddl.go).
func (s *session) abandon(key, gs string) {
	keep := 2*s.ttlMicros + abandonKeep.Microseconds()
	s.background(func(ctx context.Context) error {
		var err error
		if s.b.dialect == Postgres {
			var n int64
			err = s.b.scanRow(ctx, s.b.q.abandon2, []any{key, gs, s.id, keep}, &n)
		} else if _, err = s.b.exec(ctx, s.b.q.abandonMark, key, gs, s.id, keep, keep); err == nil {
			_, err = s.b.exec(ctx, s.b.q.abandon, key, gs)
		}
		if err != nil && s.b.missingV2(err) {
			return s.deleteAbandonedV1(ctx, key, gs)
		}
		return err
	})
}

// abandonV1 is abandon for schema version 1: no mark, the owner-checked delete is
// repeated until it deletes the row (or two TTLs passed).
func (s *session) abandonV1(key, gs string) {
	s.background(func(ctx context.Context) error { return s.deleteAbandonedV1(ctx, key, gs) })
}

func (s *session) deleteAbandonedV1(ctx context.Context, key, gs string) error {
	var n int64
	if s.b.dialect == Postgres {
		var notified int64
		if err := s.b.scanRow(ctx, s.b.q.abandon, []any{key, gs, s.b.table.name}, &n, &notified); err != nil {
			return err
		}
	} else {
		res, err := s.b.exec(ctx, s.b.q.abandon, key, gs)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
	}
	if n == 0 {
		return errNotYet
	}
	return nil
}

func (s *session) Release(ctx context.Context, g lockclient.Grant) error {
	tok, err := grantToken(g)
	if err != nil {
		return err
	}
	switch s.b.dialect {
	case Postgres:
		var found bool
		var live sql.NullBool
		if !s.b.legacy() {
			err = s.b.scanRow(ctx, s.b.q.release2, []any{g.Key, s.grantSession(g), tok}, &found, &live)
			if err == nil || !s.b.missingV2(err) {
				switch {
				case err != nil:
					return unavailable("release", g.Key, err)
				case !found:
					return lockclient.ErrNotOwner
				case !live.Bool:
					return lockclient.ErrLeaseLost
				}
				return nil
			}
		}
		var notified int64
		err := s.b.scanRow(ctx, s.b.q.release, []any{g.Key, s.grantSession(g), tok, s.b.table.name}, &live, &notified)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return lockclient.ErrNotOwner
		case err != nil:
			return unavailable("release", g.Key, err)
		case !live.Bool:
			return lockclient.ErrLeaseLost
		}
		return nil
	default:
		res, err := s.b.exec(ctx, s.b.q.release, g.Key, s.grantSession(g), tok)
		if err != nil {
			return unavailable("release", g.Key, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return unavailable("release", g.Key, err)
		} else if n > 0 {
			return nil
		}
		// Not live: delete our own expired row, if nobody took the key since.
		res, err = s.b.exec(ctx, s.b.q.releaseExpired, g.Key, s.grantSession(g), tok)
		if err != nil {
			return unavailable("release", g.Key, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return unavailable("release", g.Key, err)
		} else if n > 0 {
			return lockclient.ErrLeaseLost
		}
		return lockclient.ErrNotOwner
	}
}

// Wait polls the key (Clients use AcquireQueued instead): it returns when the key is
// free or its lease expired, re-checking with a jittered poll interval, never sleeping
// past the holder's remaining lease.
func (s *session) Wait(ctx context.Context, key string) error {
	if err := s.b.checkKey(key); err != nil {
		return err
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var us int64
		err := s.b.scanRow(ctx, s.b.q.remaining, []any{key}, &us)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil // free
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return unavailable("wait", key, err)
		case us <= 0:
			return nil // expired: TryAcquire takes it over
		}
		timer.Reset(min(time.Duration(us)*time.Microsecond+backendutil.AfterExpiry(), s.b.pollDelay()))
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close ends the session: waiting AcquireQueued calls end with ErrClosed and leave
// their queues, and Close waits within ctx for that and for the clean-up of abandoned
// requests. Leases it still holds expire after their TTL (lockclient's Client releases
// its leases before closing the session).
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	already := s.closed.Swap(true)
	s.mu.Unlock()
	if already {
		return nil
	}
	s.closeWaiters()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	s.stop()
	<-done
	if s.b.lis != nil {
		return s.b.lis.removeSession(ctx)
	}
	return nil
}

// Schema version 2 missing: the backend falls back to version 1 and looks again after
// legacyRecheck.
const legacyRecheck = time.Minute

// legacy reports whether the backend currently uses schema version 1's statements.
func (b *Backend) legacy() bool {
	u := b.legacyUntil.Load()
	return u != 0 && time.Now().UnixNano() < u
}

// missingV2 reports whether err says that a table or routine does not exist (the lease
// table was created by an earlier version and not upgraded); the backend then uses
// version 1's statements for a while and warns once.
func (b *Backend) missingV2(err error) bool {
	var pe *pgconn.PgError
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &pe) && (pe.Code == "42883" || pe.Code == "42P01"): // undefined_function, undefined_table
	case errors.As(err, &me) && (me.Number == 1305 || me.Number == 1146): // ER_SP_DOES_NOT_EXIST, ER_NO_SUCH_TABLE
	default:
		return false
	}
	b.legacyUntil.Store(time.Now().Add(legacyRecheck).UnixNano())
	b.legacyWarn.Do(func() {
		slog.Warn("sqllock: the waiter queue (schema version 2) is missing; run sqllock.CreateTable to upgrade the lease table. Until then waiters are not queued (no fairness)",
			"table", b.table.String(), "err", err)
	})
	return true
}

func (s *session) Renew(ctx context.Context, g lockclient.Grant) error {
	tok, err := grantToken(g)
	if err != nil {
		return err
	}
	var res sql.Result
	switch s.b.dialect {
	case Postgres:
		res, err = s.b.exec(ctx, s.b.q.renew, g.Key, s.grantSession(g), tok, s.ttlMicros)
	case MySQL:
		res, err = s.b.exec(ctx, s.b.q.renew, s.ttlMicros, g.Key, s.grantSession(g), tok)
	}
	if err != nil {
		return unavailable("renew", g.Key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return unavailable("renew", g.Key, err)
	}
	if n > 0 {
		return nil
	}
	if s.b.dialect == MySQL {
		// MySQL counts changed rows, not matched ones: a renewal computing the very
		// expires_at already stored changes nothing. Ask whether the grant is still live.
		var live bool
		err := s.b.scanRow(ctx, s.b.q.renewCheck, []any{g.Key, s.grantSession(g), tok}, &live)
		switch {
		case err == nil && live:
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return unavailable("renew", g.Key, err)
		}
	}
	return lockclient.ErrLeaseLost
}

func (b *Backend) pollDelay() time.Duration {
	return backendutil.PollDelay(b.pollMin, b.pollMax)
}

func (b *Backend) checkKey(key string) error {
	if len(key) > MaxKeyLen {
		return fmt.Errorf("sqllock: key of %d bytes is longer than %d", len(key), MaxKeyLen)
	}
	if b.dialect == Postgres && (!utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0) {
		return fmt.Errorf("sqllock: key %q is not valid UTF-8 text without NUL (PostgreSQL stores keys as text)", key)
	}
	return nil
}

func grantToken(g lockclient.Grant) (int64, error) {
	if g.Token == 0 || g.Token > 1<<63-1 {
		return 0, fmt.Errorf("sqllock: grant of %q has invalid token %d", g.Key, g.Token)
	}
	return int64(g.Token), nil
}

// cleanOwner is backendutil.CleanOwner without NUL bytes, which PostgreSQL text cannot
// hold.
func cleanOwner(owner string) string {
	return backendutil.CleanOwner(strings.ReplaceAll(owner, "\x00", "?"))
}

func unavailable(op, key string, err error) error {
	return backendutil.Unavailable("sqllock", op, key, err)
}

// statementHook, when set by a test, sees every statement the backend sends and its
// arguments.
var statementHook atomic.Pointer[func(query string, args []any)]

// scanRow runs the one-row query q and scans its columns into dest; sql.ErrNoRows when
// it returns no row.
func (b *Backend) scanRow(ctx context.Context, q string, args []any, dest ...any) error {
	if h := statementHook.Load(); h != nil {
		(*h)(q, args)
	}
	if b.dialect == MySQL {
		st, err := b.stmt(ctx, q)
		if err != nil {
			return err
		}
		return st.QueryRowContext(ctx, args...).Scan(dest...)
	}
	return b.db.QueryRowContext(ctx, q, args...).Scan(dest...)
}

func (b *Backend) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if h := statementHook.Load(); h != nil {
		(*h)(q, args)
	}
	if b.dialect == MySQL {
		st, err := b.stmt(ctx, q)
		if err != nil {
			return nil, err
		}
		return st.ExecContext(ctx, args...)
	}
	return b.db.ExecContext(ctx, q, args...)
}

// stmt returns q prepared on b.db. go-sql-driver/mysql (without interpolateParams)
// would otherwise prepare, execute and close every statement with arguments: two round
// trips instead of one. database/sql re-prepares a *sql.Stmt on each connection that
// needs it. pgx's stdlib driver caches prepared statements by itself.
func (b *Backend) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	b.stmtMu.Lock()
	st := b.stmts[q]
	b.stmtMu.Unlock()
	if st != nil {
		return st, nil
	}
	// Prepare without holding the mutex: it waits for the server, within ctx.
	st, err := b.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	b.stmtMu.Lock()
	defer b.stmtMu.Unlock()
	if prev := b.stmts[q]; prev != nil {
		st.Close() // another caller won the race
		return prev, nil
	}
	if b.stmts == nil {
		b.stmts = map[string]*sql.Stmt{}
	}
	b.stmts[q] = st
	return st, nil
}
