package sqllock

import (
	"database/sql/driver"
	"errors"
	"reflect"
	"slices"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/internal/unwrap"
)

// This package recognises the databases' errors and drivers without importing
// go-sql-driver/mysql, so that an application that uses PostgreSQL only does not link
// the MySQL driver (see "Dependencies" in the package doc):
//
//   - PostgreSQL errors by their SQLSTATE, through the method SQLState() string that
//     pgx's *pgconn.PgError has;
//   - go-sql-driver/mysql's *MySQLError and MySQLDriver by reflection on the type's
//     package path and name, reading the error's Number field (uint16). A type of
//     another package or with another shape is not recognised: the error is then
//     classified as any other (not retryable, not a missing object), the driver not
//     detected (New asks for WithDialect). dberror_test.go checks both against the
//     driver's real types, so a driver release that renames them fails the tests.

// mysqlPkgPath is the import path of go-sql-driver/mysql.
const mysqlPkgPath = "github.com/go-sql-driver/mysql"

// pgState returns the SQLSTATE of the first error in err's tree that reports one with
// a method SQLState() string (pgx's *pgconn.PgError), and whether there is one.
func pgState(err error) (string, bool) {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return st.SQLState(), true
	}
	return "", false
}

// pgStateIn reports whether err carries a PostgreSQL SQLSTATE, and it is one of states.
func pgStateIn(err error, states ...string) bool {
	st, ok := pgState(err)
	return ok && slices.Contains(states, st)
}

// mysqlNumber returns the error number of the first go-sql-driver/mysql *MySQLError in
// err's tree (the order of errors.As: depth first, following Unwrap() error and
// Unwrap() []error), and whether there is one.
func mysqlNumber(err error) (uint16, bool) {
	for range 64 { // depth bound: a chain that loops cannot hang the caller
		if err == nil {
			return 0, false
		}
		if n, ok := mysqlErrorValue(err); ok {
			return n, true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if n, ok := mysqlNumber(e); ok {
					return n, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}

// mysqlErrorValue reads the Number of err itself if it is a non-nil *MySQLError of
// go-sql-driver/mysql.
func mysqlErrorValue(err error) (uint16, bool) {
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0, false
	}
	t := v.Type().Elem()
	if t.Kind() != reflect.Struct || t.Name() != "MySQLError" || t.PkgPath() != mysqlPkgPath {
		return 0, false
	}
	f := v.Elem().FieldByName("Number")
	if !f.IsValid() || f.Kind() != reflect.Uint16 {
		return 0, false
	}
	return uint16(f.Uint()), true
}

// isMySQLErr reports whether err's tree holds a go-sql-driver/mysql *MySQLError whose
// number is one of nums.
func isMySQLErr(err error, nums ...uint16) bool {
	n, ok := mysqlNumber(err)
	if !ok {
		return false
	}
	for _, want := range nums {
		if n == want {
			return true
		}
	}
	return false
}

// driverDialect returns the dialect of d, a pool's driver, after peeling off wrappers
// (fenced-pgx, fenced-mysql, otelsql): Postgres and isPgx for pgx's *stdlib.Driver,
// MySQL for go-sql-driver/mysql's MySQLDriver (pointer or value), Detect otherwise.
func driverDialect(d driver.Driver) (dialect Dialect, isPgx bool) {
	d = unwrap.Driver(d)
	if _, ok := d.(*stdlib.Driver); ok {
		return Postgres, true
	}
	t := reflect.TypeOf(d)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t.Name() == "MySQLDriver" && t.PkgPath() == mysqlPkgPath {
		return MySQL, false
	}
	return Detect, false
}
