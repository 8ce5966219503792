// Package faultdriver puts one fault at the k-th statement the fenced wrapper sends
// and checks what the caller was told against what was committed (kept from red-team
// rt53a, which found nothing: the package covers a class the repository had no
// generator for).
//
// Driver is a database/sql driver that sits between fencedsql.Wrap and the real driver
// (pgx's stdlib, go-sql-driver/mysql). Once a Fault is armed it counts every statement
// the wrapper sends — an operation's inner statements, the session and lazy checks on a
// connection, the caller's next write, COMMIT — and at the Fault's K-th puts the fault
// in the statement's place. The kinds every dialect shares are KindCancel (a context
// that ended before the statement was sent), KindBadConn (driver.ErrBadConn, the
// connection closed, nothing sent) and KindLostAfter (the statement ran, then the
// connection was cut and its reply lost); a dialect adds its server errors (Driver.Kinds).
//
// The checker (sweep.go) runs each trial against reference runs without a fault: see
// InTransaction and Autocommit.
package faultdriver

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
)

// The kinds of fault Driver injects for every dialect.
const (
	KindCancel    = "cancel"    // context.Canceled, nothing sent
	KindBadConn   = "badconn"   // driver.ErrBadConn, nothing sent, the connection closed
	KindLostAfter = "lostafter" // the statement ran; the connection was cut, Driver.LostErr returned
)

// Inject runs in place of the statement query on c and returns the error the real
// driver would have returned for the fault. It may use c.Kill and c.ExecRaw.
type Inject func(c *Conn, query string) error

// Fault is one armed fault: Kind at the K-th statement sent after Driver.Arm (K < 1:
// never; the trial only counts and logs the statements).
type Fault struct {
	K    int
	Kind string

	mu    sync.Mutex
	n     int
	fired bool
	log   []string
}

// Fired reports whether the fault was injected.
func (f *Fault) Fired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// Sent returns how many statements were counted, and one line each ("3:DELETE …",
// the faulted one marked "<== kind").
func (f *Fault) Sent() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, append([]string(nil), f.log...)
}

// Driver wraps Base; register it under fencedsql.Wrap once per test binary.
type Driver struct {
	Base driver.Driver
	// Kinds are the dialect's own faults; an entry overrides a shared kind's default.
	Kinds map[string]Inject
	// LostErr is what KindLostAfter returns when the statement itself succeeded: the
	// real driver's error for a connection lost while reading the reply.
	LostErr error

	armed atomic.Pointer[Fault]
}

// Arm arms f for the statements sent from now on; Arm(nil) disarms.
func (d *Driver) Arm(f *Fault) { d.armed.Store(f) }

// Open opens a connection of Base.
func (d *Driver) Open(name string) (driver.Conn, error) {
	c, err := d.Base.Open(name)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, d: d}, nil
}

// Conn is a connection of Driver.
type Conn struct {
	c    driver.Conn
	d    *Driver
	dead bool
}

// Kill closes the real connection; every later use of c returns driver.ErrBadConn.
func (c *Conn) Kill() {
	c.dead = true
	_ = c.c.Close()
}

// ExecRaw sends query on the real connection, uncounted.
func (c *Conn) ExecRaw(query string) error {
	_, err := c.c.(driver.ExecerContext).ExecContext(context.Background(), query, nil)
	return err
}

func short(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 70 {
		q = q[:70] + "…"
	}
	return q
}

// step runs send, or the armed fault in its place when this is its K-th statement.
func (c *Conn) step(q string, send func() error) error {
	if c.dead {
		return driver.ErrBadConn
	}
	f := c.d.armed.Load()
	if f == nil {
		return send()
	}
	f.mu.Lock()
	f.n++
	hit := !f.fired && f.n == f.K
	mark := ""
	if hit {
		f.fired = true
		mark = " <== " + f.Kind
	}
	f.log = append(f.log, fmt.Sprintf("%d:%s%s", f.n, short(q), mark))
	f.mu.Unlock()
	if !hit {
		return send()
	}
	if inject, ok := c.d.Kinds[f.Kind]; ok {
		return inject(c, q)
	}
	switch f.Kind {
	case KindCancel:
		return context.Canceled
	case KindBadConn:
		c.Kill()
		return driver.ErrBadConn
	case KindLostAfter:
		err := send()
		c.Kill()
		if err != nil {
			return err
		}
		return c.d.LostErr
	}
	panic("faultdriver: unknown kind " + f.Kind)
}

// lostAfterNow: the statement being sent is the one whose reply KindLostAfter loses.
func (c *Conn) lostAfterNow() bool {
	f := c.d.armed.Load()
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired && f.n == f.K && f.Kind == KindLostAfter
}

// Prepare is refused: the wrapper sends every statement through ExecContext and
// QueryContext (MySQL: interpolateParams=true).
func (c *Conn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("faultdriver: Prepare not expected")
}

func (c *Conn) Close() error { return c.c.Close() }

func (c *Conn) Begin() (driver.Tx, error) { return c.BeginTx(context.Background(), driver.TxOptions{}) }

func (c *Conn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	var tx driver.Tx
	err := c.step("BEGIN", func() (err error) {
		tx, err = c.c.(driver.ConnBeginTx).BeginTx(ctx, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &connTx{c: c, tx: tx}, nil
}

func (c *Conn) ExecContext(ctx context.Context, q string, a []driver.NamedValue) (res driver.Result, err error) {
	err = c.step(q, func() (err error) {
		res, err = c.c.(driver.ExecerContext).ExecContext(ctx, q, a)
		return err
	})
	return res, err
}

func (c *Conn) QueryContext(ctx context.Context, q string, a []driver.NamedValue) (rows driver.Rows, err error) {
	err = c.step(q, func() (err error) {
		rows, err = c.c.(driver.QueryerContext).QueryContext(ctx, q, a)
		if err == nil && c.lostAfterNow() {
			rows = buffer(rows) // the statement ran: read its rows before the cut
		}
		return err
	})
	return rows, err
}

func (c *Conn) Ping(ctx context.Context) error {
	if c.dead {
		return driver.ErrBadConn
	}
	return c.c.(driver.Pinger).Ping(ctx)
}

func (c *Conn) ResetSession(ctx context.Context) error {
	if c.dead {
		return driver.ErrBadConn
	}
	return c.c.(driver.SessionResetter).ResetSession(ctx)
}

func (c *Conn) IsValid() bool {
	if v, ok := c.c.(driver.Validator); ok {
		return !c.dead && v.IsValid()
	}
	return !c.dead
}

func (c *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.c.(driver.NamedValueChecker).CheckNamedValue(nv)
}

type connTx struct {
	c  *Conn
	tx driver.Tx
}

func (t *connTx) Commit() error { return t.c.step("COMMIT", t.tx.Commit) }

func (t *connTx) Rollback() error {
	if t.c.dead {
		return driver.ErrBadConn
	}
	return t.tx.Rollback()
}

// bufRows holds rows read before the connection was cut.
type bufRows struct {
	cols []string
	vals [][]driver.Value
	i    int
}

func buffer(r driver.Rows) driver.Rows {
	b := &bufRows{cols: r.Columns()}
	for {
		dest := make([]driver.Value, len(b.cols))
		if r.Next(dest) != nil {
			break
		}
		b.vals = append(b.vals, dest)
	}
	_ = r.Close()
	return b
}

func (b *bufRows) Columns() []string { return b.cols }
func (b *bufRows) Close() error      { return nil }
func (b *bufRows) Next(dest []driver.Value) error {
	if b.i >= len(b.vals) {
		return io.EOF
	}
	copy(dest, b.vals[b.i])
	b.i++
	return nil
}
