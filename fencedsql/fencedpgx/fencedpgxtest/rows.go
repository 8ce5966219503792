// The test double's result rows and single row.

package fencedpgxtest

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Rows are a mock query's rows (pgx.Rows). Scan assigns values to pointers of the
// same (or a convertible) type, and to sql.Scanner destinations (pgtype's types).
type Rows struct {
	cols   []string
	rows   [][]any
	i      int
	err    error
	closed bool
}

var _ pgx.Rows = (*Rows)(nil)

func (r *Rows) Close()                        { r.closed = true }
func (r *Rows) Err() error                    { return r.err }
func (r *Rows) CommandTag() pgconn.CommandTag { return pgconn.NewCommandTag("SELECT") }
func (r *Rows) FieldDescriptions() []pgconn.FieldDescription {
	out := make([]pgconn.FieldDescription, len(r.cols))
	for i, c := range r.cols {
		out[i] = pgconn.FieldDescription{Name: c}
	}
	return out
}
func (r *Rows) Next() bool {
	if r.closed || r.err != nil || r.i+1 >= len(r.rows) {
		r.closed = true
		return false
	}
	r.i++
	return true
}
func (r *Rows) Values() ([]any, error) {
	if r.i < 0 || r.i >= len(r.rows) {
		return nil, errors.New("fencedpgxtest: no current row")
	}
	return r.rows[r.i], nil
}
func (r *Rows) RawValues() [][]byte  { return nil }
func (r *Rows) Conn() *pgx.Conn      { return nil }
func (r *Rows) TypeMap() *pgtype.Map { return nil }
func (r *Rows) Scan(dest ...any) error {
	vals, err := r.Values()
	if err != nil {
		return err
	}
	if len(dest) != len(vals) {
		return fmt.Errorf("fencedpgxtest: %d scan destinations for %d columns", len(dest), len(vals))
	}
	for i, d := range dest {
		if s, ok := d.(sql.Scanner); ok {
			if err := s.Scan(vals[i]); err != nil {
				return err
			}
			continue
		}
		dv := reflect.ValueOf(d)
		if dv.Kind() != reflect.Pointer || dv.IsNil() {
			return fmt.Errorf("fencedpgxtest: destination %d is not a pointer", i)
		}
		v := reflect.ValueOf(vals[i])
		switch {
		case !v.IsValid():
			dv.Elem().SetZero()
		case v.Type().AssignableTo(dv.Elem().Type()):
			dv.Elem().Set(v)
		case v.Type().ConvertibleTo(dv.Elem().Type()):
			dv.Elem().Set(v.Convert(dv.Elem().Type()))
		default:
			return fmt.Errorf("fencedpgxtest: cannot scan %T into %T", vals[i], d)
		}
	}
	return nil
}

type mockRow struct{ rows pgx.Rows }

func (r mockRow) Scan(dest ...any) error {
	defer r.rows.Close()
	if err := r.rows.Err(); err != nil {
		return err
	}
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	return r.rows.Scan(dest...)
}
