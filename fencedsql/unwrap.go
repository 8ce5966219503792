package fencedsql

import (
	"database/sql/driver"

	"github.com/fencedsql/fencedsql/internal/unwrap"
)

// Unwrap returns the wrapped driver's own connection under driverConn, the value that
// database/sql hands a sql.Conn.Raw callback. It peels off every layer that exposes
// its connection with a Raw() driver.Conn method — this package's and
// github.com/XSAM/otelsql's alike — so the result is, say, a *stdlib.Conn (pgx) or
// go-sql-driver/mysql's connection, whatever order the wrappers were stacked in. A value
// without such a method is returned as it is.
//
//	err := sqlConn.Raw(func(driverConn any) error {
//		pc := fencedsql.Unwrap(driverConn).(*stdlib.Conn).Conn() // *pgx.Conn
//		_, err := pc.Exec(ctx, "LISTEN jobs")
//		return err
//	})
//
// Anything done on the raw connection is NOT fenced: its statements are sent as
// written, are not checked for a token, never carry one, and their errors are the
// driver's own, not this package's. Use it for what only the driver can do (LISTEN,
// COPY, driver-specific results, reading server parameters), never to write to a
// guarded table. The database-side guard triggers (see the dialect packages), if
// installed, still refuse such writes.
//
// The raw connection stays owned by database/sql: do not keep it after the callback
// returns, and do not close it.
func Unwrap(driverConn any) any { return unwrap.Conn(driverConn) }

// UnwrapDriver returns the driver under d, a driver returned by Wrap (or by sql.DB's
// Driver method on a fenced pool), peeling off every layer with an Unwrap()
// driver.Driver method. It lets code that picks behaviour by driver type (pgx's
// *stdlib.Driver, go-sql-driver/mysql's MySQLDriver) recognise a fenced pool.
// Connections opened directly with the returned driver are NOT fenced.
func UnwrapDriver(d driver.Driver) driver.Driver { return unwrap.Driver(d) }

// Raw returns the wrapped driver connection. Statements sent on it are not fenced:
// see Unwrap.
func (c *conn) Raw() driver.Conn {
	// What the caller does on the raw connection is unseen: the session check runs
	// again before the next guarded write, reading afresh what a tracking dialect kept
	// (dialect.SessionForgetter), and so do the table checks, per connection, since a
	// SET search_path, USE or TEMP table there may make a guarded name resolve to
	// another table (rearmNames, which also drops the prepared statements).
	c.sessionOK = false
	c.sessionDirty = true
	c.forgetTrackedSession()
	c.rearmNames()
	return c.raw
}

// Unwrap returns the wrapped driver. Connections it opens are not fenced: see
// UnwrapDriver.
func (d *wrappedDriver) Unwrap() driver.Driver { return d.raw }
