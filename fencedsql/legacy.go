package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"
)

// The legacy driver.Execer and driver.Queryer. database/sql itself never calls them on
// this connection (it prefers the Context versions), but code that reaches the
// connection through sql.Conn.Raw may: go-sql-driver/mysql's README reads the
// per-statement results of a multi-statement Exec that way
// (res.(mysql.Result).AllRowsAffected()). They take the same path as ExecContext and
// QueryContext — the same rewrite, token checks, schema check and error mapping — and
// return the wrapped driver's own driver.Result, so such driver-specific interfaces
// stay reachable. Without a token a guarded write through them fails with ErrNoToken,
// as it would through database/sql: there is no context to carry one.

// Exec implements driver.Execer.
func (c *conn) Exec(query string, args []driver.Value) (driver.Result, error) {
	return c.ExecContext(context.Background(), query, namedValues(args))
}

// Query implements driver.Queryer.
func (c *conn) Query(query string, args []driver.Value) (driver.Rows, error) {
	return c.QueryContext(context.Background(), query, namedValues(args))
}

// errNamedLegacy is database/sql's answer when named arguments meet a driver that only
// has the legacy interfaces.
var errNamedLegacy = errors.New("sql: driver does not support the use of Named Parameters")

// legacyValues converts arguments for a legacy (non-Context) driver method, refusing
// named ones as database/sql does.
func legacyValues(args []driver.NamedValue) ([]driver.Value, error) {
	for _, a := range args {
		if a.Name != "" {
			return nil, errNamedLegacy
		}
	}
	return values(args), nil
}

// viaLegacy makes a legacy (context-less) Exec or Query call: the arguments become
// plain values, and a context that is already done fails before the call, as
// database/sql does for drivers without the context interfaces.
func viaLegacy[T any](ctx context.Context, args []driver.NamedValue, call func([]driver.Value) (T, error)) (T, error) {
	var zero T
	dargs, err := legacyValues(args)
	if err != nil {
		return zero, err
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	return call(dargs)
}
