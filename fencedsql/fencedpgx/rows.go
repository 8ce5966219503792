package fencedpgx

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// finisher maps the errors of a query's rows and records its outcome when they close:
// the engine's rows (adapter.Rows), or a batch item's.
type finisher interface {
	MapErr(err error) error
	Close() error
}

// Rows are pgx's rows of a query, with their errors mapped as fencedsql maps every
// error: PostgreSQL may report a fenced write's NOT NULL violation (ErrFenced) or a
// unique violation (ErrDuplicate) only after the first rows of an UPDATE … RETURNING,
// and Err reports it as such. Everything else is pgx's.
type Rows struct {
	pgx.Rows
	fin    finisher
	done   func()
	closed bool
	err    error
	l      *link // the link the rows were read on, for Conn
}

var _ pgx.Rows = (*Rows)(nil)

// Conn returns the underlying *pgx.Conn, as pgx's rows do. It is not fenced: while the
// rows are open, the connection's session check and table checks are re-armed, as
// Conn.Unwrap does. Once they are closed, a pool's connection is back in the pool:
// do not use it.
func (r *Rows) Conn() *pgx.Conn {
	if !r.closed && r.l != nil {
		r.l.c.Unwrapped()
	}
	return r.Rows.Conn()
}

// Next advances to the next row; at the end (or on an error) the rows are closed.
func (r *Rows) Next() bool {
	if r.closed {
		return false
	}
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

// Close closes the rows (and returns a pool connection). It is safe to call more than
// once.
func (r *Rows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.err = r.fin.Close()
	if r.done != nil {
		r.done()
	}
}

// Err returns the rows' error, mapped (ErrFenced, ErrVersionConflict, ErrDuplicate).
func (r *Rows) Err() error {
	if r.closed {
		return r.err
	}
	if err := r.Rows.Err(); err != nil {
		return r.fin.MapErr(err)
	}
	return nil
}

// row is QueryRow's result, as pgx's: Scan reads the first row and closes the rows.
type row struct{ rows pgx.Rows }

func (r *row) Scan(dest ...any) error {
	rows := r.rows
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	for _, d := range dest {
		if _, ok := d.(*pgtype.DriverBytes); ok {
			rows.Close()
			return fmt.Errorf("cannot scan into *pgtype.DriverBytes from QueryRow")
		}
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	_ = rows.Scan(dest...)
	rows.Close()
	return rows.Err()
}

// errRows are the rows of a query that failed before it returned rows (or was never
// sent): pgx returns rows that report the error, and so does fencedpgx.
type errRows struct{ err error }

func (r *errRows) Close()                                       {}
func (r *errRows) Err() error                                   { return r.err }
func (r *errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (r *errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (r *errRows) Next() bool                                   { return false }
func (r *errRows) Scan(...any) error                            { return r.err }
func (r *errRows) Values() ([]any, error)                       { return nil, r.err }
func (r *errRows) RawValues() [][]byte                          { return nil }
func (r *errRows) Conn() *pgx.Conn                              { return nil }
func (r *errRows) TypeMap() *pgtype.Map                         { return nil }

// finishedRows are the pgx rows of a query the wrapper ran to its end itself and that
// returns no row (adapter.Finished: a fenced DELETE without RETURNING sent with Query
// or QueryRow): no field, no row, no error, and the statement's command tag, as pgx
// answers such a query. Conn is nil: the statements ran on a connection the caller
// does not hold.
type finishedRows struct{ tag pgconn.CommandTag }

func (finishedRows) Close()                                       {}
func (finishedRows) Err() error                                   { return nil }
func (r finishedRows) CommandTag() pgconn.CommandTag              { return r.tag }
func (finishedRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (finishedRows) Next() bool                                   { return false }
func (finishedRows) Scan(...any) error                            { return errors.New("fencedpgx: Scan of rows without a row") }
func (finishedRows) Values() ([]any, error) {
	return nil, errors.New("fencedpgx: Values of rows without a row")
}
func (finishedRows) RawValues() [][]byte  { return nil }
func (finishedRows) Conn() *pgx.Conn      { return nil }
func (finishedRows) TypeMap() *pgtype.Map { return pgtype.NewMap() }
