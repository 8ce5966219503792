package sqllock

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// MySQLError is a look-alike of go-sql-driver/mysql's type in another package: it must
// not be taken for the driver's.
type MySQLError struct{ Number uint16 }

func (e *MySQLError) Error() string { return fmt.Sprint("look-alike ", e.Number) }

type multiErr []error

func (m multiErr) Error() string   { return "multi" }
func (m multiErr) Unwrap() []error { return m }

func TestMySQLNumberReadsTheDriversError(t *testing.T) {
	me := &mysql.MySQLError{Number: 1213, Message: "deadlock"}
	for name, err := range map[string]error{
		"bare":     me,
		"wrapped":  fmt.Errorf("a: %w", fmt.Errorf("b: %w", me)),
		"joined":   errors.Join(errors.New("other"), fmt.Errorf("x: %w", me)),
		"multiErr": multiErr{errors.New("first"), me},
	} {
		n, ok := mysqlNumber(err)
		if !ok || n != 1213 {
			t.Errorf("%s: mysqlNumber = %d, %v; want 1213, true", name, n, ok)
		}
	}
	for name, err := range map[string]error{
		"nil":        nil,
		"plain":      errors.New("Error 1213: deadlock"),
		"look-alike": &MySQLError{Number: 1213},
		"nil ptr":    (*mysql.MySQLError)(nil),
		"pg":         &pgconn.PgError{Code: "40P01"},
	} {
		if n, ok := mysqlNumber(err); ok {
			t.Errorf("%s: mysqlNumber = %d, true; want not found", name, n)
		}
	}
}

func TestClassifiersMatchTheDriversErrors(t *testing.T) {
	my := func(n uint16) error { return fmt.Errorf("sqllock: x: %w", &mysql.MySQLError{Number: n}) }
	pg := func(code string) error { return fmt.Errorf("sqllock: x: %w", &pgconn.PgError{Code: code}) }
	cases := []struct {
		err                 error
		retryable, missing  bool
		mySPExists, myParse bool
	}{
		{err: pg("55P03"), retryable: true},
		{err: pg("40P01")},
		{err: pg("42P01"), missing: true},
		{err: pg("42883"), missing: true},
		{err: pg("3F000"), missing: true},
		{err: my(1213), retryable: true},
		{err: my(1205)},
		{err: my(1146), missing: true},
		{err: my(1305), missing: true},
		{err: my(1049), missing: true},
		{err: my(1304), mySPExists: true},
		{err: my(1064), myParse: true},
		{err: errors.New("1213 55P03 42P01")},
		{err: &MySQLError{Number: 1146}},
	}
	for _, c := range cases {
		if got := retryable(c.err); got != c.retryable {
			t.Errorf("retryable(%v) = %v, want %v", c.err, got, c.retryable)
		}
		if got := missingObject(c.err); got != c.missing {
			t.Errorf("missingObject(%v) = %v, want %v", c.err, got, c.missing)
		}
		if got := isMySQLErr(c.err, 1304); got != c.mySPExists {
			t.Errorf("isMySQLErr(%v, 1304) = %v, want %v", c.err, got, c.mySPExists)
		}
		if got := isMySQLErr(c.err, 1064); got != c.myParse {
			t.Errorf("isMySQLErr(%v, 1064) = %v, want %v", c.err, got, c.myParse)
		}
	}
}

type wrappedDriver struct{ driver.Driver }

func (w wrappedDriver) Unwrap() driver.Driver { return w.Driver }

type otherDriver struct{}

func (otherDriver) Open(string) (driver.Conn, error) { return nil, errors.New("no") }

func TestDriverDialect(t *testing.T) {
	cases := []struct {
		name string
		d    driver.Driver
		want Dialect
		pgx  bool
	}{
		{"pgx", &stdlib.Driver{}, Postgres, true},
		{"fenced pgx", wrappedDriver{&stdlib.Driver{}}, Postgres, true},
		{"mysql ptr", &mysql.MySQLDriver{}, MySQL, false},
		{"mysql value", mysql.MySQLDriver{}, MySQL, false},
		{"fenced mysql", wrappedDriver{wrappedDriver{&mysql.MySQLDriver{}}}, MySQL, false},
		{"other", otherDriver{}, Detect, false},
	}
	for _, c := range cases {
		got, pgx := driverDialect(c.d)
		if got != c.want || pgx != c.pgx {
			t.Errorf("%s: driverDialect = %v, %v; want %v, %v", c.name, got, pgx, c.want, c.pgx)
		}
	}
}
