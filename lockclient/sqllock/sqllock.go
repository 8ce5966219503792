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
	logger           *slog.Logger
	minToken         uint64
	err              error // the first invalid option value
}

// invalid records the first invalid option value.
func (c *config) invalid(option, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("sqllock: %w: %s: %s", lockclient.ErrInvalidConfig, option, fmt.Sprintf(format, args...))
	}
}

// WithLogger sets the logger of the backend's warnings (a lease table of schema version
// 1 that was not upgraded; see the package doc). The default discards them: the package
// never logs through slog's default logger. A nil logger means the default.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithDialect sets the dialect instead of detecting it from the driver (needed when the
// *sql.DB uses another driver or a wrapper around pgx or go-sql-driver/mysql).
func WithDialect(d Dialect) Option {
	return func(c *config) {
		if d != Detect && d != Postgres && d != MySQL {
			c.invalid("WithDialect", "unknown dialect %v", d)
			return
		}
		c.dialect = d
	}
}

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
// holder's remaining lease (plus a little jitter). It requires 0 < min <= max: New
// refuses other values.
func WithPollInterval(min, max time.Duration) Option {
	return func(c *config) {
		if min <= 0 || max < min {
			c.invalid("WithPollInterval", "the bounds must have 0 < min <= max, got min %v, max %v", min, max)
			return
		}
		c.pollMin, c.pollMax = min, max
	}
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
	logger  *slog.Logger

	// legacyUntil (unix nanoseconds): until then the backend uses the statements of
	// schema version 1 (no queue), because a version 2 object was missing; see legacy.
	legacyUntil atomic.Int64
	legacyWarn  sync.Once

	// plainRenewUntil (unix nanoseconds), MySQL: until then renewals and releases use
	// the plain statements of earlier releases, because their procedures were missing;
	// see plainRenew.
	plainRenewUntil atomic.Int64
	plainRenewWarn  sync.Once

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt // MySQL: prepared once per *sql.DB, see stmt

	seqChecked atomic.Bool // the token source keeps grant order and survives a crash (tokenSeqChecked)

	idMu sync.Mutex
	id   string // the identity of the token source (serviceID), "" until read

	minToken  uint64     // WithMinToken
	floorMu   sync.Mutex // serialises openFloor
	floorDone bool       // the floor of WithMinToken was raised
}

var _ lockclient.Backend = (*Backend)(nil)

// New returns a Backend that keeps leases in the lease table of db. The table must
// exist (see CreateTable); New does not touch the database. The dialect is detected from
// db.Driver() (pgx's stdlib driver, go-sql-driver/mysql, or either wrapped by fencedsql:
// "fenced-pgx" pools LISTEN too) unless WithDialect is given.
//
// A nil db, an invalid option value or a driver whose dialect cannot be detected is an
// error wrapping lockclient.ErrInvalidConfig that names the option and the value. A
// missing lease table is found by the first Acquire or TryAcquire (a *SchemaError,
// returned at once), or earlier by [Backend.CheckTable].
func New(db *sql.DB, opts ...Option) (*Backend, error) {
	if db == nil {
		return nil, fmt.Errorf("sqllock: %w: New: the *sql.DB is nil", lockclient.ErrInvalidConfig)
	}
	cfg := config{table: DefaultTable, pollMin: DefaultPollMin, pollMax: DefaultPollMax,
		logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	detected, isPgx := driverDialect(db.Driver()) // fenced-pgx, fenced-mysql: the driver they wrap
	if cfg.dialect == Detect {
		cfg.dialect = detected
	}
	if cfg.dialect != Postgres && cfg.dialect != MySQL {
		return nil, fmt.Errorf("sqllock: %w: cannot detect the dialect of driver %T: use WithDialect", lockclient.ErrInvalidConfig, db.Driver())
	}
	tn, err := parseTable(cfg.table)
	if err != nil {
		return nil, fmt.Errorf("%w (WithTable)", err) // wraps lockclient.ErrInvalidConfig
	}
	cfg.pollMin, cfg.pollMax = backendutil.PollBounds(cfg.pollMin, cfg.pollMax)
	b := &Backend{db: db, dialect: cfg.dialect, table: tn, q: buildQueries(cfg.dialect, tn),
		pollMin: cfg.pollMin, pollMax: cfg.pollMax, logger: cfg.logger, minToken: cfg.minToken}
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

// Open implements lockclient.Backend. The session is a random id that identifies this
// client's rows in the lease table. The first Open of a backend reads the token source's
// identity (one round trip, see lockclient.ServiceIdentifier), and with WithMinToken
// raises the token floor; either fails, wrapping lockclient.ErrUnavailable, when the
// database cannot be reached.
func (b *Backend) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("sqllock: %w: ttl must be positive, got %v", lockclient.ErrInvalidConfig, ttl)
	}
	if err := b.openFloor(ctx); err != nil {
		return nil, err
	}
	if _, err := b.serviceID(ctx); err != nil {
		return nil, err
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

var _ lockclient.QueueSession = (*session)(nil)

func (b *Backend) pollDelay() time.Duration {
	return backendutil.PollDelay(b.pollMin, b.pollMax)
}

func (b *Backend) checkKey(key string) error {
	if len(key) > MaxKeyLen {
		return fmt.Errorf("sqllock: %w: key of %d bytes is longer than %d", lockclient.ErrInvalidConfig, len(key), MaxKeyLen)
	}
	if b.dialect == Postgres && (!utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0) {
		return fmt.Errorf("sqllock: %w: key %q is not valid UTF-8 text without NUL (PostgreSQL stores keys as text)", lockclient.ErrInvalidConfig, key)
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

// unavailable is the error of an operation that could not reach the database: it
// wraps lockclient.ErrUnavailable, which callers retry. A statement refused unsent by
// a layer between the backend and the database (notSent) is no outage: it wraps
// lockclient.ErrInvalidConfig instead, so Acquire fails at once rather than retry
// until its deadline; nor is a statement refused because a lease in the context is
// lost (lockclient.ErrLeaseLost, returned as it is). A server that refused the write as
// a standby, replica or read-only server (refusedAsReplica) is replicaError.
func unavailable(op, key string, err error) error {
	if errors.Is(err, lockclient.ErrRetired) {
		return err // the lock service was retired: no retry passes (Retire)
	}
	if errors.Is(err, lockclient.ErrLeaseLost) {
		// A lease in the caller's context is lost, and a layer below (a fenced pool)
		// refused the statement unsent: no retry under that context passes.
		return fmt.Errorf("sqllock: %s: the statement was refused under a lost lease in the context: %w", op, err)
	}
	if refusedAsReplica(err) {
		return replicaError(op, err)
	}
	var ns notSent
	if errors.As(err, &ns) && ns.NotSent() {
		return fmt.Errorf("sqllock: %s: %w: the connection refused the statement before sending it (a fenced pool lets the lease table's token source be read only: run sqllock's RaiseFloor, WithMinToken and grants on a plain connection): %w", op, lockclient.ErrInvalidConfig, err)
	}
	return backendutil.Unavailable("sqllock", op, key, err)
}

// notSent is implemented by the refusal of a layer that refused a statement before
// sending it (fencedsql.UnsupportedError), which no retry can pass.
type notSent interface{ NotSent() bool }

// fail is the error of a statement that failed with err: a *SchemaError when err says
// that an object of the lease table does not exist (nothing ran) or that the token
// source is exhausted (exhausted), otherwise an error wrapping lockclient.ErrUnavailable.
func (b *Backend) fail(ctx context.Context, op, key string, err error) error {
	if missingObject(err) {
		return b.schemaError("an object", err)
	}
	return b.grantFailed(ctx, op, key, err)
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
