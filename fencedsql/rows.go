package fencedsql

import (
	"context"
	"database/sql/driver"
	"io"
	"reflect"

	"github.com/fencedsql/fencedsql/fencedsql/internal/adapter"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// rows wraps the rows of every query (a guarded write with RETURNING, a claimed read,
// or a statement sent as written, p nil), so that an error the database reports while
// rows stream (PostgreSQL sends the NOT NULL violation after the first rows, a unique
// violation of INSERT … RETURNING likewise) is mapped like any other. It forwards every
// optional Rows interface; where the wrapped rows lack one, it answers as database/sql's
// default would.
type rows struct {
	driver.Rows
	core *core
	p    *plan.Plan
	tok  uint64
	ver  int64
	// read (p nil), when set, is the read of a two-statement claim whose rows these
	// are: their errors are mapped as a statement's sent as written, but for a lock
	// wait, the claim's (mapPassErr).
	read *plan.Plan

	// done, when set, is called once with the first error the rows reported (nil if
	// none) when they close: a guarded statement's outcome is known only then.
	done    func(error)
	lastErr error

	// expect, when set, judges the number of rows returned once they end (see
	// countRows), or, complete false, at least n rows; its error replaces io.EOF. most
	// (with expect) is the number of rows it accepts: a row past it fails Next at
	// once, in place of the row.
	expect func(n int64, complete bool) error
	most   int64
	n      int64

	// onEmpty, when set (a one-statement claim of a key, absent.go), runs once when
	// the rows close without an error having returned no row — or a number the
	// wrapper cannot read: the claim found nothing; its error is Close's.
	onEmpty func() error
}

var (
	_ driver.RowsNextResultSet              = (*rows)(nil)
	_ driver.RowsColumnTypeScanType         = (*rows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*rows)(nil)
	_ driver.RowsColumnTypeLength           = (*rows)(nil)
	_ driver.RowsColumnTypeNullable         = (*rows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*rows)(nil)
)

func newRows(r driver.Rows, k *core, p *plan.Plan, tok uint64, ver int64) driver.Rows {
	return &rows{Rows: r, core: k, p: p, tok: tok, ver: ver}
}

func (r *rows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err == nil {
		r.n++
		if r.expect != nil && r.n > r.most {
			// More rows than the fencing UPDATE stamped: this one is not the claim's
			// (a caller reading one row, sql.Row.Scan, never reaches io.EOF).
			return r.judge(r.n, false)
		}
		return nil
	}
	if err == io.EOF {
		if xerr := r.judge(r.n, true); xerr != nil {
			return xerr
		}
		return err
	}
	return r.fail(r.mapErr(err))
}

// mapErr maps an error the rows reported: for p's statement (core.mapErr), or, p
// nil, as a statement's sent as written (core.mapPassErr), a claim's read's included.
func (r *rows) mapErr(err error) error {
	if r.p == nil {
		return r.core.mapPassErr(r.read, err)
	}
	return r.core.mapErr(context.Background(), r.p, r.tok, r.ver, err)
}

// judge runs expect (countRows) once, with the number of rows returned: all of them
// (complete), or so far.
func (r *rows) judge(n int64, complete bool) error {
	if r.expect == nil {
		return nil
	}
	expect := r.expect
	r.expect = nil
	return r.fail(expect(n, complete))
}

// Close closes the rows. Counted rows (expect) the caller left unread are read first
// and judged (drain); rows the caller read natively, not through Next (fencedpgx), are
// judged on the count the native rows report once closed (adapter.RowCounter).
func (r *rows) Close() error {
	rc, native := r.native().(adapter.RowCounter)
	drained := error(nil)
	if !native {
		drained = r.drain()
	}
	err := r.fail(r.mapErr(r.Rows.Close()))
	if native && err == nil && r.expect != nil {
		if n, ok := rc.RowsRead(); ok {
			err = r.judge(n, true)
		}
	}
	if drained != nil {
		err = drained
	}
	if empty := r.onEmpty; empty != nil && err == nil && r.lastErr == nil {
		r.onEmpty = nil
		n, known := r.n, true
		if native {
			n, known = rc.RowsRead()
		}
		if !known || n == 0 {
			err = empty()
		}
	}
	if r.done != nil {
		done := r.done
		r.done = nil
		done(r.lastErr)
	}
	return err
}

// drain reads the rows the caller left unread, closing counted rows (countRows)
// before their end: the count is judged on every row the statement returned, and its
// error is Close's (sql.Row.Scan returns it). A driver reads them on Close anyway.
// Rows that already failed are not judged: their error is the statement's.
func (r *rows) drain() error {
	if r.expect == nil || r.lastErr != nil {
		return nil
	}
	dest := make([]driver.Value, len(r.Rows.Columns()))
	for r.expect != nil {
		if err := r.Next(dest); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
	return nil
}

// onDone adds f to the functions called once when the rows close (done), after those
// added before it.
func (r *rows) onDone(f func(error)) {
	if prev := r.done; prev != nil {
		r.done = func(err error) { prev(err); f(err) }
		return
	}
	r.done = f
}

// fail remembers the first error the rows reported, for done.
func (r *rows) fail(err error) error {
	if err != nil && r.lastErr == nil {
		r.lastErr = err
	}
	return err
}

func (r *rows) HasNextResultSet() bool {
	if x, ok := r.native().(driver.RowsNextResultSet); ok {
		return x.HasNextResultSet()
	}
	return false
}

func (r *rows) NextResultSet() error {
	if err := r.drain(); err != nil { // the driver drops the rows left unread
		return err
	}
	if x, ok := r.native().(driver.RowsNextResultSet); ok {
		err := x.NextResultSet()
		if err == nil || err == io.EOF {
			return err
		}
		return r.fail(r.mapErr(err))
	}
	return io.EOF
}

func (r *rows) ColumnTypeScanType(i int) reflect.Type {
	if x, ok := r.native().(driver.RowsColumnTypeScanType); ok {
		return x.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *rows) ColumnTypeDatabaseTypeName(i int) string {
	if x, ok := r.native().(driver.RowsColumnTypeDatabaseTypeName); ok {
		return x.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *rows) ColumnTypeLength(i int) (int64, bool) {
	if x, ok := r.native().(driver.RowsColumnTypeLength); ok {
		return x.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *rows) ColumnTypeNullable(i int) (bool, bool) {
	if x, ok := r.native().(driver.RowsColumnTypeNullable); ok {
		return x.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *rows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if x, ok := r.native().(driver.RowsColumnTypePrecisionScale); ok {
		return x.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

// closeStmtRows releases the statement prepared for a query (stmtcache.go) when its
// rows close; the rows' error, if any, drops it from the cache.
type closeStmtRows struct {
	driver.Rows
	c      *conn
	cs     *cachedStmt
	failed error
}

func (r *closeStmtRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err != nil && err != io.EOF && r.failed == nil {
		r.failed = err
	}
	return err
}

func (r *closeStmtRows) Close() error {
	err := r.Rows.Close()
	failed := r.failed
	if failed == nil {
		failed = err
	}
	if rerr := r.c.release(r.cs, failed); err == nil {
		err = rerr
	}
	return err
}

// native is the driver's rows under r: its optional interfaces are r's.
func (r *rows) native() driver.Rows {
	if cs, ok := r.Rows.(*closeStmtRows); ok {
		return cs.Rows
	}
	return r.Rows
}
