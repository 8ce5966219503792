package fencedpgx

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/internal/adapter"
)

// DB is what Wrap and WrapConn accept: the pgx methods fencedpgx sends statements
// through. *pgxpool.Pool and *pgx.Conn implement it, and so do test doubles (the
// fencedpgxtest package's mock). A DB that also has Prepare(ctx, name, sql) can prepare
// statements through a Conn made with WrapConn.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error)
	BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error)
}

// Querier is the interface sqlc generates for pgx/v5 (its DBTX): *Pool, *Conn and *Tx
// implement it, so `queries := db.New(fencedPool)` works unchanged.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var (
	_ Querier = (*Pool)(nil)
	_ Querier = (*Conn)(nil)
	_ Querier = (*Tx)(nil)
	_ pgx.Tx  = (*Tx)(nil)
	_ DB      = (*pgxpool.Pool)(nil)
	_ DB      = (*pgx.Conn)(nil)
)

// newEngine builds fencedsql's engine for PostgreSQL with opts (the dialect defaults to
// postgres.Dialect; a WithDialect in opts overrides it).
func newEngine(opts []fencedsql.Option) (adapter.Engine, error) {
	all := append([]fencedsql.Option{fencedsql.WithDialect(postgres.Dialect)}, opts...)
	return adapter.New(all)
}

// Pool is a fenced pgx pool: a *pgxpool.Pool (New) or any DB used as one (Wrap). It is
// safe for concurrent use.
type Pool struct {
	eng  adapter.Engine
	pool *pgxpool.Pool // New, Wrap of a *pgxpool.Pool: each call acquires a connection
	db   DB            // Wrap: calls go to db as they are (a *pgxpool.Pool: the caller's, not closed)

	// links keeps one engine connection per pgx connection (*pgx.Conn → *link), as
	// database/sql keeps one wrapper per driver connection: its per-connection state
	// (the transaction binding, the session check) stays that connection's, and a call
	// allocates none. A link is used only while its connection is acquired.
	links   sync.Map
	nlinks  atomic.Int64
	pruneAt atomic.Int64

	// hooks: the pool runs code of the application's on a connection between two of
	// its uses (pgxpool.Config's PrepareConn, BeforeAcquire or AfterRelease), which
	// may change its session (the tenant's search_path set at acquire): a link
	// acquired again is re-armed (adapter.Conn.Reacquired; red-team rt44b F3).
	hooks bool

	// unwraps counts Unwrap calls: a link whose count is behind re-arms at its
	// acquire (link).
	unwraps atomic.Uint64
}

// New wraps pool: writes to the guarded tables named by opts (fencedsql.Guard, …)
// are fenced with the token of the statement's context (fencedsql.WithLease,
// fencedsql.WithToken) or of its transaction. A configuration error (a bad guard) is
// returned here.
//
// Before its first statement (or Ping, or CopyFrom) the pool does what a database/sql
// pool of fencedsql does at its first connection, with the same code: it guards every
// table the database records as guarded (the registries written by fencedsql-schema
// -apply or schema.RegisterTables, and the tables that carry the guard's triggers),
// listed in opts or not, and the partitions, inheritance children and parents of every
// guarded table; and, with the schema check on (the default), it fails with
// fencedsql.ErrSchema, naming the table, when a table named by a Guard does not exist —
// a typo must not leave the real table unfenced. That call fails and sends nothing of
// its own; the work runs again at the next call. With the schema check off
// (WithSchemaCheck(false), a test double) a failed read of the records is logged, not
// fatal, as in fencedsql.
func New(pool *pgxpool.Pool, opts ...fencedsql.Option) (*Pool, error) {
	if pool == nil {
		return nil, errors.New("fencedpgx: nil pool")
	}
	eng, err := newEngine(opts)
	if err != nil {
		return nil, err
	}
	return &Pool{eng: eng, pool: pool, hooks: reuseHooks(pool)}, nil
}

// reuseHooks reports whether pool runs hooks of the application's on a connection
// between two of its uses. AfterConnect is not one: it runs before a connection's
// first use, which every check sees.
func reuseHooks(pool *pgxpool.Pool) bool {
	cfg := pool.Config()
	return cfg.PrepareConn != nil || cfg.BeforeAcquire != nil || cfg.AfterRelease != nil //nolint:staticcheck // BeforeAcquire: deprecated, still run
}

// Wrap wraps any DB as a pool. It is meant for test doubles: each statement goes to db
// as it is, and db is taken for one connection — the session check (a query, since the
// wrapper cannot read pgx's parameters of a DB) must reach the connection the statement
// then runs on, so a DB that spreads its calls over several connections must not be
// wrapped this way. A *pgxpool.Pool is the exception: it is used as New uses it (each
// call acquires one connection, on which the session check and the statement both
// run), except that Close leaves it open.
func Wrap(db DB, opts ...fencedsql.Option) (*Pool, error) {
	if db == nil {
		return nil, errors.New("fencedpgx: nil DB")
	}
	eng, err := newEngine(opts)
	if err != nil {
		return nil, err
	}
	if pool, ok := db.(*pgxpool.Pool); ok {
		// Sent to the pool itself, the session query and the statement it vouches for
		// would each acquire a connection, not necessarily the same one.
		if pool == nil {
			return nil, errors.New("fencedpgx: nil DB")
		}
		return &Pool{eng: eng, pool: pool, db: db, hooks: reuseHooks(pool)}, nil
	}
	return &Pool{eng: eng, db: db}, nil
}

// link returns a link for one call: over an acquired connection (New), released by
// link.release, or over the wrapped DB.
func (p *Pool) link(ctx context.Context) (*link, error) {
	if p.pool == nil {
		n := &native{base: p.db, begin: p.db}
		n.prep, _ = p.db.(preparer)
		return p.rearm(newLink(p.eng, n, nil)), nil
	}
	c, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	pc := c.Conn()
	if v, ok := p.links.Load(pc); ok {
		l := v.(*link)
		l.n.base, l.n.begin = c, c
		l.done = c.Release
		if p.hooks {
			l.c.Reacquired()
		}
		return p.rearm(l), nil
	}
	l := newLink(p.eng, &native{base: c, begin: c, prep: pc, pc: pc}, c.Release)
	p.links.Store(pc, l)
	if n := p.nlinks.Add(1); n >= p.pruneAt.Load() {
		p.prune()
	}
	return p.rearm(l), nil
}

// rearm re-arms l, just acquired, as Conn.Unwrap does when Unwrap was called since l
// was last re-armed (or, for a link new to the pool, ever: its connection may have
// run statements through the unwrapped pool before the fenced pool first saw it). One
// atomic load otherwise.
func (p *Pool) rearm(l *link) *link {
	if u := p.unwraps.Load(); l.unwraps != u {
		l.c.Unwrapped()
		l.unwraps = u
	}
	return l
}

// prune forgets the links of closed connections (the pool replaced them).
func (p *Pool) prune() {
	live := int64(0)
	p.links.Range(func(k, _ any) bool {
		if k.(*pgx.Conn).IsClosed() {
			p.links.Delete(k)
		} else {
			live++
		}
		return true
	})
	p.nlinks.Store(live)
	p.pruneAt.Store(2*live + 16)
}

// Exec runs sql; a write to a guarded table is fenced.
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	l, err := p.link(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer l.release()
	return l.exec(ctx, sql, args, nil)
}

// Query runs sql and returns its rows; the connection returns to the pool when they
// are closed.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	l, err := p.link(ctx)
	if err != nil {
		return &errRows{err: err}, err
	}
	return l.query(ctx, sql, args, nil, l.release)
}

// QueryRow runs sql and returns its first row.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, _ := p.Query(ctx, sql, args...)
	return &row{rows: rows}
}

// Begin begins a transaction bound to the token ctx carries, as BeginTx.
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) { return p.BeginTx(ctx, pgx.TxOptions{}) }

// BeginTx begins a transaction on one of the pool's connections. Begun with a context
// from fencedsql.WithLease or WithToken, it is bound to that token: its guarded writes
// carry it whatever their own context says, and Commit refuses (rolling back) once the
// lease is lost.
func (p *Pool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	l, err := p.link(ctx)
	if err != nil {
		return nil, err
	}
	t, err := begin(ctx, l, opts, newStmtMap())
	if err != nil {
		l.release()
		return nil, err
	}
	t.release = l.release
	return t, nil
}

// SendBatch sends b with every queued statement fenced (see Tx.SendBatch).
func (p *Pool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	l, err := p.link(ctx)
	if err != nil {
		return &batchResults{err: err, closed: true}
	}
	return l.sendBatch(ctx, b, nil, l.release)
}

// CopyFrom copies rows into a table that is not guarded. Into a guarded table (a
// partition or inheritance child of one included) it is refused
// (fencedsql.ErrUnsupported) and nothing is sent: copied rows would carry no token and
// pass no check.
func (p *Pool) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	l, err := p.link(ctx)
	if err != nil {
		return 0, err
	}
	defer l.release()
	return l.copyFrom(ctx, table, columns, src)
}

// Ping runs the pool's first-use work if it has not run yet (see New) and pings the
// database (Wrap of a DB other than a *pgxpool.Pool: the first-use work only).
func (p *Pool) Ping(ctx context.Context) error {
	l, err := p.link(ctx)
	if err != nil {
		return err
	}
	defer l.release()
	return l.ping(ctx)
}

// Close closes the wrapped pool (New only: a DB given to Wrap stays open).
func (p *Pool) Close() {
	if p.pool != nil && p.db == nil {
		p.pool.Close()
	}
}

// Unwrap returns the wrapped pool or DB. It is not fenced: statements sent through it
// reach the guarded tables without a token check (only the database-side guards, see
// schema.Check, refuse them).
//
// Its connections are the fenced pool's: a setting changed through it (SET
// search_path, SET synchronous_commit, set_config, a TEMP table named like a guarded
// table) stays on the connection the fenced pool later acquires. Each call of Unwrap
// therefore re-arms every connection at its next acquire by the fenced pool, as
// Conn.Unwrap does (the session check reads the session afresh, and the connection's
// table checks are made per connection from then on): call Unwrap where the raw pool
// is used, as in p.Unwrap().Exec(ctx, …), rather than keeping its result. A pool kept
// from an earlier Unwrap (or the *pgxpool.Pool given to New or Wrap, used directly),
// or a connection the fenced pool acquired and re-armed between the call and the
// statement sent through it, is not seen: statements sent on it must not change session settings or name
// resolution, or must undo them before the connection returns (pgxpool's
// AfterRelease, or a RESET ALL / DISCARD ALL there). The wrapper cannot tell which
// pooled connection such a statement ran on, and re-arming every connection at every
// acquire would cost the session query and the per-connection table checks — a
// catalog query or more — before every guarded statement.
func (p *Pool) Unwrap() DB {
	p.unwraps.Add(1)
	if p.db != nil {
		return p.db
	}
	return p.pool
}

// lookup plans sql through the engine's cache: the per-statement cost before anything
// is sent (benchmarks).
func (p *Pool) lookup(sql string) error { return p.eng.Lookup(sql, false) }

// Conn is a fenced pgx connection (NewConn, WrapConn). Like *pgx.Conn it is not safe
// for concurrent use.
type Conn struct {
	l     *link
	raw   DB
	stmts *stmtMap
}

// NewConn wraps conn (see New: the same first-use work runs before its first
// statement).
func NewConn(conn *pgx.Conn, opts ...fencedsql.Option) (*Conn, error) {
	if conn == nil {
		return nil, errors.New("fencedpgx: nil conn")
	}
	eng, err := newEngine(opts)
	if err != nil {
		return nil, err
	}
	return &Conn{l: newLink(eng, &native{base: conn, begin: conn, prep: conn, pc: conn}, nil), raw: conn, stmts: newStmtMap()}, nil
}

// WrapConn wraps any DB as one connection (test doubles); it can prepare statements
// when db has Prepare.
func WrapConn(db DB, opts ...fencedsql.Option) (*Conn, error) {
	if db == nil {
		return nil, errors.New("fencedpgx: nil DB")
	}
	eng, err := newEngine(opts)
	if err != nil {
		return nil, err
	}
	n := &native{base: db, begin: db}
	n.prep, _ = db.(preparer)
	return &Conn{l: newLink(eng, n, nil), raw: db, stmts: newStmtMap()}, nil
}

// Exec runs sql, or the statement prepared under the name sql; a write to a guarded
// table is fenced.
func (c *Conn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := c.inTx(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return c.l.exec(ctx, sql, args, c.stmts)
}

// Query runs sql (or a prepared statement's name) and returns its rows.
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := c.inTx(); err != nil {
		return &errRows{err: err}, err
	}
	return c.l.query(ctx, sql, args, c.stmts, nil)
}

// QueryRow runs sql and returns its first row.
func (c *Conn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := c.inTx(); err != nil {
		return &row{rows: &errRows{err: err}}
	}
	return c.l.queryRow(ctx, sql, args, c.stmts, nil)
}

// inTx refuses a statement of the Conn's own while a transaction is open on it: pgx
// would run it inside that transaction, under the transaction's binding (a tokenless or
// older-token write stored with the transaction's token, committed by its Commit).
// While a Tx is open, its statements go through the Tx.
func (c *Conn) inTx() error {
	if c.l.n.tx != nil {
		return &fencedsql.UnsupportedError{Reason: "a transaction is open on this connection: run the statement on its Tx (or after Commit/Rollback)"}
	}
	return nil
}

// Begin begins a transaction bound to the token ctx carries (see Pool.BeginTx).
func (c *Conn) Begin(ctx context.Context) (pgx.Tx, error) { return c.BeginTx(ctx, pgx.TxOptions{}) }

// BeginTx begins a transaction bound to the token ctx carries (see Pool.BeginTx).
func (c *Conn) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	return begin(ctx, c.l, opts, c.stmts)
}

// SendBatch sends b with every queued statement fenced (see Tx.SendBatch).
func (c *Conn) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := c.inTx(); err != nil {
		return &batchResults{err: err, closed: true}
	}
	return c.l.sendBatch(ctx, b, c.stmts, nil)
}

// CopyFrom copies rows into a table that is not guarded (see Pool.CopyFrom).
func (c *Conn) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := c.inTx(); err != nil {
		return 0, err
	}
	return c.l.copyFrom(ctx, table, columns, src)
}

// Prepare prepares sql under name, as pgx's Prepare: Exec, Query, QueryRow and
// SendBatch then run it when given name as their SQL. A guarded write is prepared as
// its fenced rewrite, once, with the token as a parameter: the statement serves every
// token and transaction. The description is the rewrite's, with the caller's name,
// text and parameters. The name is fencedpgx's: on the connection every statement is
// prepared under its own text (pgx names it by a digest), so the name runs nothing
// through pgx itself (Unwrap).
func (c *Conn) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return c.l.prepare(ctx, name, sql, c.stmts)
}

// Deallocate forgets the statement prepared under name (and deallocates it when it was
// prepared as written, under its text, and no other name of the Conn uses that text).
func (c *Conn) Deallocate(ctx context.Context, name string) error {
	p := c.stmts.get(name)
	if p == nil {
		return errors.New("fencedpgx: no prepared statement " + name)
	}
	delete(c.stmts.m, name)
	_ = p.st.Close()
	if !p.native {
		return nil
	}
	for _, o := range c.stmts.m {
		if o.native && o.sql == p.sql {
			return nil
		}
	}
	if d, ok := c.raw.(interface {
		Deallocate(ctx context.Context, name string) error
	}); ok {
		return d.Deallocate(ctx, p.sql)
	}
	return nil
}

// Ping runs the first-use work if it has not run yet (see New) and pings the
// connection (WrapConn: the first-use work only).
func (c *Conn) Ping(ctx context.Context) error { return c.l.ping(ctx) }

// Close closes the wrapped connection (NewConn only).
func (c *Conn) Close(ctx context.Context) error {
	if pc := c.l.n.pc; pc != nil {
		return pc.Close(ctx)
	}
	return nil
}

// Unwrap returns the wrapped connection or DB. It is not fenced (see Pool.Unwrap).
// As for database/sql's sql.Conn.Raw, what the caller does on it is unseen, so the
// connection is re-armed: before its next guarded write the session check reads the
// session afresh (synchronous_commit, kept once read, is read again), and its table
// checks are made for this connection from then on (a SET search_path or a TEMP
// table sent on it may make a guarded name resolve to another table). The re-arming
// happens at the call: statements sent on a result kept and used after later fenced
// statements are not seen, so call Unwrap where the connection is used.
func (c *Conn) Unwrap() DB {
	c.l.c.Unwrapped()
	return c.raw
}
