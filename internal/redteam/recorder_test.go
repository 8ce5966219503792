// The recording connector: every statement the fenced driver sends, per connection.

package redteam

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ---------------------------------------------------------------- recording driver

// recorder logs what reaches the raw driver while on.
type recorder struct {
	mu  sync.Mutex
	on  bool
	log []string
}

func (r *recorder) add(kind, sql string, args []driver.NamedValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return
	}
	line := kind
	if sql != "" {
		line += " " + sql
	}
	if len(args) > 0 {
		vals := make([]string, len(args))
		for i, a := range args {
			vals[i] = fmt.Sprintf("%d:%s=%#v", a.Ordinal, a.Name, a.Value)
		}
		line += " [" + strings.Join(vals, " ") + "]"
	}
	r.log = append(r.log, line)
}

func (r *recorder) start() {
	r.mu.Lock()
	r.on, r.log = true, nil
	r.mu.Unlock()
}

func (r *recorder) stop() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return slices.Clone(r.log)
}

type recConnector struct {
	raw driver.Connector
	rec *recorder
}

func (c recConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.raw.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recConn{raw: conn, rec: c.rec}, nil
}

func (c recConnector) Driver() driver.Driver { return c.raw.Driver() }

// recConn forwards every interface the three drivers' connections implement.
type recConn struct {
	raw driver.Conn
	rec *recorder
}

var (
	_ driver.ConnBeginTx        = (*recConn)(nil)
	_ driver.ConnPrepareContext = (*recConn)(nil)
	_ driver.ExecerContext      = (*recConn)(nil)
	_ driver.QueryerContext     = (*recConn)(nil)
	_ driver.Pinger             = (*recConn)(nil)
	_ driver.SessionResetter    = (*recConn)(nil)
	_ driver.Validator          = (*recConn)(nil)
	_ driver.NamedValueChecker  = (*recConn)(nil)
)

func (c *recConn) Unwrap() driver.Conn { return c.raw }

func (c *recConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *recConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.rec.add("prepare", query, nil)
	if p, ok := c.raw.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.raw.Prepare(query)
}

func (c *recConn) Close() error { return c.raw.Close() }

func (c *recConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *recConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.rec.add("begin", "", nil)
	var tx driver.Tx
	var err error
	if b, ok := c.raw.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else {
		tx, err = c.raw.Begin() //nolint:staticcheck // fallback
	}
	if err != nil {
		return nil, err
	}
	return recTx{raw: tx, rec: c.rec}, nil
}

func (c *recConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.rec.add("exec", query, args)
	if e, ok := c.raw.(driver.ExecerContext); ok {
		return e.ExecContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (c *recConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.rec.add("query", query, args)
	if q, ok := c.raw.(driver.QueryerContext); ok {
		return q.QueryContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (c *recConn) Ping(ctx context.Context) error {
	if p, ok := c.raw.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *recConn) ResetSession(ctx context.Context) error {
	if r, ok := c.raw.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *recConn) IsValid() bool {
	if v, ok := c.raw.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *recConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.raw.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type recTx struct {
	raw driver.Tx
	rec *recorder
}

func (t recTx) Commit() error {
	t.rec.add("commit", "", nil)
	return t.raw.Commit()
}

func (t recTx) Rollback() error {
	t.rec.add("rollback", "", nil)
	return t.raw.Rollback()
}
