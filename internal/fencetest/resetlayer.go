package fencetest

import (
	"context"
	"database/sql/driver"
	"sync"
)

// ResetLayer is a driver wrapper layer of the kind the reset judges must not trust: it
// exposes what it wraps with Raw() driver.Conn (as otelsql's layer does) and runs
// code of its own on each reuse (ResetSession). With Reconnect it replaces the
// connection it holds by a new one from Next (a failover-aware layer reconnecting to
// the current primary; Next's own configuration sets the new session); otherwise it
// forwards the reset to the connection it holds and then runs OnReset on it (a
// tenancy or import layer that sets search_path or sql_mode at checkout). Next
// defaults to First.
type ResetLayer struct {
	First, Next driver.Connector
	OnReset     func(ctx context.Context, c driver.Conn) error
	Reconnect   bool
}

// Connect opens a connection of First wrapped in the layer.
func (c ResetLayer) Connect(ctx context.Context) (driver.Conn, error) {
	raw, err := c.First.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &resetLayerConn{conn: raw, c: c}, nil
}

// Driver returns First's driver.
func (c ResetLayer) Driver() driver.Driver { return c.First.Driver() }

type resetLayerConn struct {
	mu   sync.Mutex
	conn driver.Conn
	c    ResetLayer
}

func (l *resetLayerConn) inner() driver.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn
}

func (l *resetLayerConn) Raw() driver.Conn { return l.inner() }

func (l *resetLayerConn) ResetSession(ctx context.Context) error {
	if l.c.Reconnect {
		next := l.c.Next
		if next == nil {
			next = l.c.First
		}
		fresh, err := next.Connect(ctx)
		if err != nil {
			return err
		}
		l.mu.Lock()
		old := l.conn
		l.conn = fresh
		l.mu.Unlock()
		return old.Close()
	}
	if r, ok := l.inner().(driver.SessionResetter); ok {
		if err := r.ResetSession(ctx); err != nil {
			return err
		}
	}
	if l.c.OnReset == nil {
		return nil
	}
	return l.c.OnReset(ctx, l.inner())
}

func (l *resetLayerConn) Prepare(q string) (driver.Stmt, error) { return l.inner().Prepare(q) }
func (l *resetLayerConn) Close() error                          { return l.inner().Close() }
func (l *resetLayerConn) Begin() (driver.Tx, error)             { return l.inner().Begin() } //nolint:staticcheck // forwarded
func (l *resetLayerConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return l.inner().(driver.ExecerContext).ExecContext(ctx, q, args)
}
func (l *resetLayerConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return l.inner().(driver.QueryerContext).QueryContext(ctx, q, args)
}
func (l *resetLayerConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return l.inner().(driver.ConnPrepareContext).PrepareContext(ctx, q)
}
func (l *resetLayerConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	return l.inner().(driver.ConnBeginTx).BeginTx(ctx, o)
}
