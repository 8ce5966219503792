package sqllock

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"

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

// WithPollInterval sets the bounds of the jittered poll interval with which Wait
// re-checks a held key when it cannot listen for notifications (MySQL, WithPolling,
// or while the PostgreSQL listening connection is down). Defaults: 20ms and 200ms.
// A poll never sleeps past the holder's remaining lease (plus a little jitter).
func WithPollInterval(min, max time.Duration) Option {
	return func(c *config) { c.pollMin, c.pollMax = min, max }
}

// WithPolling makes Wait poll on PostgreSQL too, instead of LISTENing on a dedicated
// connection: for connection poolers that do not support LISTEN (PgBouncer in
// transaction mode), or drivers other than pgx. Releases still send the notification.
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
	switch baseDriver(db.Driver()).(type) { // fenced-pgx, fenced-mysql: the driver they wrap
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
		b.lis = newListener(db, quotePG(tn.name))
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
	s := &session{b: b, id: hex.EncodeToString(id[:]), owner: cleanOwner(owner), ttlMicros: us, bg: bg, stop: stop}
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

	bg   context.Context // parent of background clean-ups; cancelled by Close
	stop context.CancelFunc
	mu   sync.Mutex // guards wg.Add against Close
	wg   sync.WaitGroup
}

// grantSession is the session_id a grant request stores: the session id and an id of
// the request, so that the grant of one abandoned request can be found and deleted
// without touching the session's other grants. Renew and Release match it exactly.
func (s *session) grantSession(g lockclient.Grant) string {
	if v, ok := g.Data.(string); ok && v != "" {
		return v
	}
	return s.id // a grant that is not this backend's: matches no row
}

func (s *session) TryAcquire(ctx context.Context, key string) (lockclient.Grant, error) {
	if err := s.b.checkKey(key); err != nil {
		return lockclient.Grant{}, err
	}
	var req [8]byte
	if _, err := crand.Read(req[:]); err != nil {
		return lockclient.Grant{}, fmt.Errorf("sqllock: request id: %w", err)
	}
	gs := s.id + ":" + hex.EncodeToString(req[:])
	// PostgreSQL returns no row when the key is held; MySQL's procedure returns 0.
	var tok int64
	err := s.b.scanRow(ctx, s.b.q.grant, []any{key, s.owner, gs, s.ttlMicros}, &tok)
	if errors.Is(err, sql.ErrNoRows) && s.b.dialect == Postgres || err == nil && tok == 0 {
		return lockclient.Grant{}, lockclient.ErrHeld
	}
	if err != nil {
		s.abandon(key, gs) // the request may still reach the server
		return lockclient.Grant{}, unavailable("try-acquire", key, err)
	}
	if tok <= 0 {
		return lockclient.Grant{}, unavailable("try-acquire", key, fmt.Errorf("invalid token %d from the server", tok))
	}
	return lockclient.Grant{Key: key, Token: uint64(tok), Data: gs}, nil
}

// Clean-up of abandoned grant requests.
const (
	abandonFirst = 20 * time.Millisecond
	abandonMax   = time.Second
)

// abandon deletes, in the background, the row that the grant request gs may still
// create: a request whose outcome is unknown can reach the server after the caller gave
// up (a stalled connection). The row is found by its session_id, unique to the request;
// the delete is repeated with backoff (20ms doubling to 1s) for two TTLs after the
// failure or until it deletes the row. A request delivered later than that leaves a
// grant that expires after its TTL.
func (s *session) abandon(key, gs string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.bg, 2*time.Duration(s.ttlMicros)*time.Microsecond)
		defer cancel()
		backoff := abandonFirst
		for {
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			n, err := s.deleteAbandoned(rctx, key, gs)
			rcancel()
			if err == nil && n > 0 {
				return
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			backoff = min(2*backoff, abandonMax)
		}
	}()
}

func (s *session) deleteAbandoned(ctx context.Context, key, gs string) (int64, error) {
	if s.b.dialect == Postgres {
		var n, notified int64
		err := s.b.scanRow(ctx, s.b.q.abandon, []any{key, gs, s.b.table.name}, &n, &notified)
		return n, err
	}
	res, err := s.b.exec(ctx, s.b.q.abandon, key, gs)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
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

func (s *session) Release(ctx context.Context, g lockclient.Grant) error {
	tok, err := grantToken(g)
	if err != nil {
		return err
	}
	switch s.b.dialect {
	case Postgres:
		var live bool
		var notified int64
		err := s.b.scanRow(ctx, s.b.q.release, []any{g.Key, s.grantSession(g), tok, s.b.table.name}, &live, &notified)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return lockclient.ErrNotOwner
		case err != nil:
			return unavailable("release", g.Key, err)
		case !live:
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

func (s *session) Wait(ctx context.Context, key string) error {
	if err := s.b.checkKey(key); err != nil {
		return err
	}
	var sub *subscription
	if s.b.lis != nil && !s.closed.Load() {
		sub = s.b.lis.subscribe(key)
		defer s.b.lis.unsubscribe(sub)
	}
	var notified <-chan struct{}
	if sub != nil {
		notified = sub.ch
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// Read before the check: if LISTEN was active then, a release committed after
		// the check reaches us (or the listener wakes us when its connection fails).
		listening := sub != nil && s.b.lis.listening()
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
		d := time.Duration(us)*time.Microsecond + backendutil.AfterExpiry()
		if listening {
			d = min(d, 5*s.b.pollMax)
		} else {
			d = min(d, s.b.pollDelay())
		}
		timer.Reset(d)
		select {
		case <-notified:
			return nil
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close ends the session. Leases it still holds expire after their TTL (lockclient's
// Client releases its leases before closing the session).
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	already := s.closed.Swap(true)
	s.mu.Unlock()
	if already {
		return nil
	}
	// Wait within ctx for the clean-up of abandoned requests, then cancel what is left.
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
