// The recording driver: what the real wrapper sends for a statement, as Statements.

package fencedtest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Statements returns what the wrapper sends to the driver for userSQL run with args
// under ctx (which carries the token, as from fencedsql.WithToken, and optionally an
// expected version): inside a transaction when inTx is true, else on its own; through
// QueryContext when query is true, else ExecContext. The arguments are the user's
// values (or matchers) as given, and the token and version as int64. It returns the
// calls in order (BEGIN, EXEC/QUERY, COMMIT/ROLLBACK); it sets no expectation. An error
// is the wrapper's refusal (nothing would be sent), such as fencedsql.ErrNoToken.
func (m *Mock) Statements(ctx context.Context, inTx, query bool, userSQL string, args ...driver.Value) ([]Statement, error) {
	return m.rec.run(ctx, inTx, query, userSQL, args, nil)
}

// ---- the recording driver ----

// Op is the kind of a driver call the wrapper makes.
type Op int

// The driver calls a Statement can record.
const (
	OpBegin Op = iota
	OpExec
	OpQuery
	OpCommit
	OpRollback
)

// String returns the call's name as Statement.String prints it: BEGIN, EXEC, QUERY,
// COMMIT or ROLLBACK.
func (o Op) String() string {
	switch o {
	case OpBegin:
		return "BEGIN"
	case OpExec:
		return "EXEC"
	case OpQuery:
		return "QUERY"
	case OpCommit:
		return "COMMIT"
	case OpRollback:
		return "ROLLBACK"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Statement is one call the wrapper made on the driver.
type Statement struct {
	Op     Op
	SQL    string         // OpExec, OpQuery
	Args   []driver.Value // in placeholder order: the user's values as given, the token and version as int64
	Failed bool           // the call was answered with the injected error
}

// String returns the call in one line: "EXEC <sql> [args]" (or QUERY), or BEGIN,
// COMMIT, ROLLBACK.
func (s Statement) String() string {
	if s.Op == OpExec || s.Op == OpQuery {
		return fmt.Sprintf("%v %s %v", s.Op, s.SQL, s.Args)
	}
	return s.Op.String()
}

// recorder is a fenced *sql.DB over a driver that records what the wrapper sends.
type recorder struct {
	db *sql.DB

	mu     sync.Mutex // serialises runs
	events []event
	fail   error // answer the next Exec/Query with this error
	// running: a run is under way (run). A query outside one — the pool's first
	// connection's catalog queries — and the dialect's session query (session) are
	// answered with an error, as sqlmock answers a query it was not told to expect:
	// the wrapper, its schema check off, logs them and goes on, on both sides.
	running bool
	session string
}

type event struct {
	op     Op
	sql    string
	args   []driver.NamedValue
	failed bool
}

func newRecorder(d dialect.Dialect, opts []fencedsql.Option) (*recorder, error) {
	r := &recorder{session: d.SessionQuery()}
	all := append([]fencedsql.Option{fencedsql.WithDialect(d)}, opts...)
	all = append(all, fencedsql.WithSchemaCheck(false))
	r.db = fencedsql.OpenDB(fencedsql.DSNConnector(recDriver{r}, ""), all...)
	r.db.SetMaxOpenConns(1)
	if err := r.db.Ping(); err != nil {
		r.db.Close()
		return nil, err
	}
	return r, nil
}

func (r *recorder) add(e event) error {
	if e.op == OpExec || e.op == OpQuery {
		if r.fail != nil {
			e.failed = true
			r.events = append(r.events, e)
			err := r.fail
			r.fail = nil
			return err
		}
	}
	r.events = append(r.events, e)
	return nil
}

const sentinelPrefix = "\x00fencedtest-arg-"

// run executes userSQL on the recording DB and returns what reached the driver. With
// inTx, the statement runs in a transaction begun with ctx and the transaction's own
// BEGIN and ROLLBACK are left out. fail, when set, answers the first Exec or Query.
func (r *recorder) run(ctx context.Context, inTx, query bool, userSQL string, args []driver.Value, fail error) ([]Statement, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Placeholders for the user's arguments, recognisable in what the driver receives,
	// so that the user's own values (or sqlmock matchers) are put back in their place.
	callArgs := make([]any, len(args))
	for i, a := range args {
		s := fmt.Sprintf("%s%d", sentinelPrefix, i)
		if na, ok := a.(sql.NamedArg); ok {
			callArgs[i] = sql.Named(na.Name, s)
		} else {
			callArgs[i] = s
		}
	}
	r.events, r.fail = nil, nil
	r.running = true
	defer func() { r.running = false }()
	var err error
	var tx *sql.Tx
	if inTx {
		if tx, err = r.db.BeginTx(ctx, nil); err != nil {
			return nil, err
		}
		defer tx.Rollback()
	}
	r.events, r.fail = nil, fail
	switch {
	case query && tx != nil:
		err = closeRows(tx.QueryContext(ctx, userSQL, callArgs...))
	case query:
		err = closeRows(r.db.QueryContext(ctx, userSQL, callArgs...))
	case tx != nil:
		_, err = tx.ExecContext(ctx, userSQL, callArgs...)
	default:
		_, err = r.db.ExecContext(ctx, userSQL, callArgs...)
	}
	events := r.events
	r.events, r.fail = nil, nil
	out := make([]Statement, 0, len(events))
	for _, e := range events {
		s := Statement{Op: e.op, SQL: e.sql, Failed: e.failed}
		for _, nv := range e.args {
			v := nv.Value
			if str, ok := v.(string); ok && strings.HasPrefix(str, sentinelPrefix) {
				var i int
				if _, perr := fmt.Sscanf(str[len(sentinelPrefix):], "%d", &i); perr == nil && i < len(args) {
					v = args[i]
				}
			}
			s.Args = append(s.Args, v)
		}
		out = append(out, s)
	}
	if err != nil && fail == nil {
		return nil, err
	}
	return out, err
}

func closeRows(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

type recDriver struct{ r *recorder }

func (d recDriver) Open(string) (driver.Conn, error) { return &recConn{r: d.r}, nil }

type recConn struct{ r *recorder }

var (
	_ driver.ExecerContext  = (*recConn)(nil)
	_ driver.QueryerContext = (*recConn)(nil)
	_ driver.ConnBeginTx    = (*recConn)(nil)
)

func (c *recConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("fencedtest: the recording driver does not prepare statements")
}
func (c *recConn) Close() error { return nil }
func (c *recConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *recConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	return recTx{c.r}, c.r.add(event{op: OpBegin})
}

func (c *recConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.r.add(event{op: OpExec, sql: q, args: args}); err != nil {
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

func (c *recConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if !c.r.running || q != "" && q == c.r.session {
		return nil, errors.New("fencedtest: the recording driver answers no catalog or session query")
	}
	if err := c.r.add(event{op: OpQuery, sql: q, args: args}); err != nil {
		return nil, err
	}
	return &recRows{}, nil
}

type recTx struct{ r *recorder }

func (t recTx) Commit() error   { return t.r.add(event{op: OpCommit}) }
func (t recTx) Rollback() error { return t.r.add(event{op: OpRollback}) }

// recRows answers every query with one row, as every statement reports one row
// changed: the wrapper counts a two-statement claim's or DELETE's rows against the
// rows its fencing UPDATE stamped, on Close too.
type recRows struct{ read bool }

func (*recRows) Columns() []string { return nil }
func (*recRows) Close() error      { return nil }
func (r *recRows) Next([]driver.Value) error {
	if r.read {
		return io.EOF
	}
	r.read = true
	return nil
}
