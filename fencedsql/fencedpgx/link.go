package fencedpgx

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/internal/adapter"
)

// link is one pgx connection (or pool, or test double) under fencedsql's engine: the
// native driver face (n) and the engine's connection wrapper over it (c). Every
// statement of a Pool, Conn and Tx goes through a link's methods.
type link struct {
	n    *native
	c    adapter.Conn
	done func() // returns an acquired pool connection; nil otherwise
	// unwraps is the count of the pool's Unwrap calls this link was re-armed for
	// (Pool.link): a pool link re-arms at its first acquire after each Unwrap.
	unwraps uint64
}

func newLink(eng adapter.Engine, n *native, done func()) *link {
	return &link{n: n, c: eng.Conn(n), done: done}
}

func (l *link) release() {
	if l.done != nil {
		done := l.done
		l.done = nil
		done()
	}
}

// args reads pgx's option arguments at the front of args, as pgx does (QueryExecMode,
// QueryResultFormats, QueryResultFormatsByOID are kept for sending; a QueryRewriter
// such as pgx.NamedArgs is applied here, so that the engine fences the statement pgx
// would send), and returns the statement and its arguments for the engine.
//
// The options go with every statement the wrapper sends for the call — its checks,
// a DELETE's fencing step, a claim's stamp — whose result columns are not the
// caller's: QueryResultFormats with one code per column (more than one code) cannot
// fit them, and is refused (ErrUnsupported, nothing sent; red-team rt55d F1: it was
// the server's 08P01 or pgx's argument-count error). One code (every column in that
// format) and QueryResultFormatsByOID (by column type) fit any statement.
func (l *link) args(ctx context.Context, sql string, args []any) (string, []driver.NamedValue, error) {
	l.n.opts = l.n.opts[:0]
	var rw pgx.QueryRewriter
loop:
	for len(args) > 0 {
		switch a := args[0].(type) {
		case pgx.QueryResultFormats:
			if len(a) > 1 {
				return "", nil, &fencedsql.UnsupportedError{Reason: fmt.Sprintf("pgx.QueryResultFormats with a code per column (%d codes): fencedpgx sends its checks and fencing steps with the call's options, and their columns are not the statement's; give one code for every column, QueryResultFormatsByOID, or none (Scan reads either format)", len(a))}
			}
			l.n.opts = append(l.n.opts, a)
		case pgx.QueryExecMode, pgx.QueryResultFormatsByOID:
			l.n.opts = append(l.n.opts, a)
		case pgx.QueryRewriter:
			rw = a
		default:
			break loop
		}
		args = args[1:]
	}
	if rw != nil {
		var err error
		if sql, args, err = rw.RewriteQuery(ctx, l.n.pc, sql, args); err != nil {
			return "", nil, fmt.Errorf("rewrite query failed: %w", err)
		}
	}
	return sql, named(args), nil
}

func named(args []any) []driver.NamedValue {
	if len(args) == 0 {
		return nil
	}
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func values(args []driver.NamedValue) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out
}

func (l *link) exec(ctx context.Context, sql string, args []any, stmts *stmtMap) (pgconn.CommandTag, error) {
	sql, nv, err := l.args(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	var res driver.Result
	if st := stmts.get(sql); st != nil {
		res, err = st.st.Exec(ctx, nv)
	} else {
		res, err = l.c.Exec(ctx, sql, nv)
	}
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if r, ok := res.(result); ok {
		return r.tag, nil
	}
	return pgconn.CommandTag{}, nil
}

// query runs a query; done (if not nil) runs once the rows are closed, or at once when
// the query fails. Like pgx's, the rows are never nil: on error they report it.
func (l *link) query(ctx context.Context, sql string, args []any, stmts *stmtMap, done func()) (pgx.Rows, error) {
	fail := func(err error) (pgx.Rows, error) {
		if done != nil {
			done()
		}
		return &errRows{err: err}, err
	}
	sql, nv, err := l.args(ctx, sql, args)
	if err != nil {
		return fail(err)
	}
	var ar adapter.Rows
	if st := stmts.get(sql); st != nil {
		ar, err = st.st.Query(ctx, nv)
	} else {
		ar, err = l.c.Query(ctx, sql, nv)
	}
	if err != nil {
		return fail(err)
	}
	switch nr := ar.Raw().(type) {
	case *nativeRows:
		return &Rows{Rows: nr.rows, fin: ar, done: done, l: l}, nil
	case adapter.Finished: // a fenced DELETE without RETURNING, already run
		return &Rows{Rows: finishedRows{tag: pgconn.NewCommandTag(nr.Command())}, fin: ar, done: done, l: l}, nil
	}
	_ = ar.Close()
	return fail(fmt.Errorf("fencedpgx: unexpected rows %T from the engine", ar.Raw()))
}

func (l *link) queryRow(ctx context.Context, sql string, args []any, stmts *stmtMap, done func()) pgx.Row {
	rows, _ := l.query(ctx, sql, args, stmts, done)
	return &row{rows: rows}
}

// prepare prepares sql under name (pgx's Prepare): a guarded write is prepared as its
// fenced rewrite, so one prepared statement serves every token. The description
// returned is the rewrite's, with the caller's name, text and parameters. The name
// lives in stmts only: on the connection every statement is prepared under its own
// text (native.PrepareContext), so the name runs nothing once stmts is gone (a
// pool's transaction ended) and nothing outside fencedpgx.
func (l *link) prepare(ctx context.Context, name, sql string, stmts *stmtMap) (*pgconn.StatementDescription, error) {
	if stmts == nil {
		return nil, errors.New("fencedpgx: a pool has no Prepare: prepare on a Conn or a Tx")
	}
	key := name
	if key == "" {
		key = sql
	}
	if e := stmts.m[key]; e != nil {
		if e.sql == sql {
			return e.desc, nil
		}
		return nil, fmt.Errorf("fencedpgx: prepared statement %q already exists with other SQL", key)
	}
	l.n.prepared = map[string]*pgconn.StatementDescription{}
	defer func() { l.n.prepared = nil }()
	st, err := l.c.Prepare(ctx, sql)
	if err != nil {
		return nil, err
	}
	desc := &pgconn.StatementDescription{Name: key, SQL: sql}
	if sd := l.n.prepared[st.SQL()]; sd != nil {
		desc.ParamOIDs, desc.Fields = sd.ParamOIDs, sd.Fields
		if n := st.NumInput(); n >= 0 && n < len(desc.ParamOIDs) {
			desc.ParamOIDs = desc.ParamOIDs[:n]
		}
	}
	stmts.m[key] = &prepared{st: st, sql: sql, desc: desc, native: st.SQL() == sql}
	return desc, nil
}

// copyFrom refuses a copy into a guarded table (after the first-use work, which may
// add the table's partitions and children to the guarded ones) and sends the others.
func (l *link) copyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	l.n.opts = l.n.opts[:0] // the engine's catalog queries carry no option of an earlier call
	if err := l.c.CheckCopy(ctx, table); err != nil {
		return 0, err
	}
	return l.n.q().CopyFrom(ctx, table, columns, src)
}

// ping runs the first-use work, then pings the connection when there is one.
func (l *link) ping(ctx context.Context) error {
	l.n.opts = l.n.opts[:0]
	if err := l.c.Open(ctx); err != nil {
		return err
	}
	if l.n.pc != nil {
		return l.n.pc.Ping(ctx)
	}
	return nil
}

// stmtMap holds the statements prepared through a Conn (shared with its transactions)
// or a pool's Tx, by name. pgx runs a prepared statement when a query's text is its
// name; so does fencedpgx, through the engine's prepared statement.
type stmtMap struct{ m map[string]*prepared }

type prepared struct {
	st     adapter.Stmt
	sql    string // the caller's text
	desc   *pgconn.StatementDescription
	native bool // the caller's text is prepared on the connection (a statement sent as written)
}

func newStmtMap() *stmtMap { return &stmtMap{m: map[string]*prepared{}} }

func (s *stmtMap) get(name string) *prepared {
	if s == nil || len(s.m) == 0 {
		return nil
	}
	return s.m[name]
}
