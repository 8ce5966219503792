package fencedpgx

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// native is the database/sql/driver face of one pgx connection (or pool, or test
// double) that fencedsql's engine wraps (adapter.Engine.Conn): the engine decides what
// to send and native sends it through pgx, returning pgx's own results inside the
// driver types so that fencedpgx can hand them to its caller unchanged. It is used by
// one goroutine at a time, like the connection it stands for.
type native struct {
	base  querier   // statements outside a transaction
	begin beginner  // begins transactions on base
	prep  preparer  // prepares statements; nil when base cannot
	pc    *pgx.Conn // the connection, for the engine's session check; nil when unknown
	tx    pgx.Tx    // the open transaction: statements go to it

	// Per call: pgx's option arguments (QueryExecMode, QueryResultFormats, …), sent
	// before the statement's arguments; the options of the next BeginTx.
	opts     []any
	txOpts   pgx.TxOptions
	prepared map[string]*pgconn.StatementDescription // SQL → description, during a Prepare
	lastTx   *nativeTx                               // the transaction BeginTx began last
}

// querier is what statements are sent through: *pgx.Conn, *pgxpool.Conn,
// *pgxpool.Pool and pgx.Tx implement it.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error)
}

type beginner interface {
	BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error)
}

type preparer interface {
	Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error)
}

var (
	_ driver.Conn               = (*native)(nil)
	_ driver.ExecerContext      = (*native)(nil)
	_ driver.QueryerContext     = (*native)(nil)
	_ driver.ConnBeginTx        = (*native)(nil)
	_ driver.ConnPrepareContext = (*native)(nil)
)

// q is where the next statement goes.
func (n *native) q() querier {
	if n.tx != nil {
		return n.tx
	}
	return n.base
}

// Conn returns the pgx connection: the postgres dialect's session check reads the
// session parameters pgx keeps (standard_conforming_strings, client_encoding) from it.
func (n *native) Conn() *pgx.Conn { return n.pc }

// values builds pgx's argument list: the call's options, then the arguments. For an
// Exec (exec), only the options pgx's Exec reads (QueryExecMode): it takes result
// formats, which a statement without rows has no use for, as an argument (a fenced
// DELETE's fencing step is an Exec of a Query call; red-team rt55d F1).
func (n *native) values(args []driver.NamedValue, exec bool) []any {
	out := make([]any, 0, len(n.opts)+len(args))
	for _, o := range n.opts {
		if _, mode := o.(pgx.QueryExecMode); mode || !exec {
			out = append(out, o)
		}
	}
	for _, a := range args {
		out = append(out, a.Value)
	}
	return out
}

// result carries pgx's command tag through the engine.
type result struct{ tag pgconn.CommandTag }

func (r result) LastInsertId() (int64, error) {
	return 0, errors.New("fencedpgx: LastInsertId is not supported by PostgreSQL (use RETURNING)")
}
func (r result) RowsAffected() (int64, error) { return r.tag.RowsAffected(), nil }

func (n *native) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	tag, err := n.q().Exec(ctx, query, n.values(args, true)...)
	if err != nil {
		return nil, err
	}
	return result{tag}, nil
}

func (n *native) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := n.q().Query(ctx, query, n.values(args, false)...)
	if err != nil {
		if rows != nil {
			rows.Close()
		}
		return nil, err
	}
	return &nativeRows{rows: rows}, nil
}

func (n *native) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if n.prep == nil {
		return nil, errors.New("fencedpgx: this connection cannot prepare statements (a pool has no Prepare: prepare on a Conn or a Tx)")
	}
	// Every statement — a fenced rewrite, and the caller's own text alike — is
	// prepared under its text: pgx then names it by a digest and runs it when a query's
	// text is that text, which is what the planner saw. The caller's name never
	// reaches pgx (fencedpgx resolves it, link.prepare): pgx runs a statement prepared
	// under a name when a query's text equals the name, and on a pool that name would
	// outlive the transaction that prepared it, running the raw text — a claim's
	// unclaimed SELECT … FOR UPDATE — for the connection's next user (red-team pgx F3).
	sd, err := n.prep.Prepare(ctx, query, query)
	if err != nil {
		return nil, err
	}
	if n.prepared != nil {
		n.prepared[query] = sd
	}
	return &nativeStmt{n: n, key: query, sd: sd}, nil
}

func (n *native) Prepare(query string) (driver.Stmt, error) {
	return n.PrepareContext(context.Background(), query)
}

// Close does nothing: the pgx connection belongs to the caller (or the pool).
func (n *native) Close() error { return nil }

func (n *native) Begin() (driver.Tx, error) {
	return n.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins a pgx transaction with the options fencedpgx set for this call (the
// engine passes none of its own: BeginTx and twoStep's own transactions use the
// defaults). Statements go to the transaction until it ends.
func (n *native) BeginTx(ctx context.Context, _ driver.TxOptions) (driver.Tx, error) {
	opts := n.txOpts
	n.txOpts = pgx.TxOptions{}
	tx, err := n.begin.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	t := &nativeTx{n: n, tx: tx, prev: n.tx, ctx: ctx}
	n.tx = tx
	n.lastTx = t
	return t, nil
}

// nativeTx is a pgx transaction as a driver.Tx. driver.Tx has no context: Commit and
// Rollback use ctx, which fencedpgx's Tx sets to its caller's before it ends the
// transaction (the begin context otherwise, for the engine's own transactions).
type nativeTx struct {
	n    *native
	tx   pgx.Tx
	prev pgx.Tx
	ctx  context.Context
}

func (t *nativeTx) Commit() error {
	defer t.end()
	return t.tx.Commit(t.ctx)
}

func (t *nativeTx) Rollback() error {
	defer t.end()
	return t.tx.Rollback(t.ctx)
}

func (t *nativeTx) end() {
	if t.n.tx == t.tx {
		t.n.tx = t.prev
	}
}

// nativeStmt is a statement prepared on the pgx connection under its text (key): pgx
// runs the prepared statement when a query's text is that text.
type nativeStmt struct {
	n   *native
	key string
	sd  *pgconn.StatementDescription
}

func (s *nativeStmt) Close() error { return nil } // it lives as long as the connection, as pgx's do

func (s *nativeStmt) NumInput() int {
	if s.sd == nil {
		return -1
	}
	return len(s.sd.ParamOIDs)
}

func (s *nativeStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), namedValues(args))
}

func (s *nativeStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), namedValues(args))
}

func (s *nativeStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.n.ExecContext(ctx, s.key, args)
}

func (s *nativeStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.n.QueryContext(ctx, s.key, args)
}

func namedValues(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// nativeRows are pgx rows as driver.Rows. fencedpgx hands the pgx rows themselves to
// its caller (Rows); the driver methods serve the engine's own catalog queries (the
// schema and session checks).
type nativeRows struct {
	rows pgx.Rows
	cols []string
}

func (r *nativeRows) Columns() []string {
	if r.cols == nil {
		fds := r.rows.FieldDescriptions()
		r.cols = make([]string, len(fds))
		for i, fd := range fds {
			r.cols[i] = fd.Name
		}
	}
	return r.cols
}

func (r *nativeRows) Close() error {
	r.rows.Close()
	return r.rows.Err()
}

// RowsRead implements adapter.RowCounter: once closed, pgx's rows carry the
// statement's command tag, which counts the rows it returned (the caller of
// fencedpgx reads pgx's rows, not these).
func (r *nativeRows) RowsRead() (int64, bool) {
	n := tagCount(r.rows.CommandTag())
	return n, n >= 0
}

func (r *nativeRows) Next(dest []driver.Value) error {
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	vals, err := r.rows.Values()
	if err != nil {
		return err
	}
	for i := range dest {
		if i < len(vals) {
			dest[i] = vals[i]
		}
	}
	return nil
}
