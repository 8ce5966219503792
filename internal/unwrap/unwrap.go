// Package unwrap peels wrapper layers off database/sql driver values: the fenced
// driver's, github.com/XSAM/otelsql's, any layer that exposes what it wraps the same
// way. It is the one implementation behind fencedsql.Unwrap and fencedsql.UnwrapDriver,
// and lets packages that must not import fencedsql (lockclient and its backends)
// recognise a wrapped pool.
package unwrap

import "database/sql/driver"

// maxLayers bounds the peeling: a wrapper that returns itself, or a cycle of wrappers,
// cannot loop forever.
const maxLayers = 16

// Conn returns the innermost connection under driverConn, the value database/sql hands
// a sql.Conn.Raw callback: it follows Raw() driver.Conn methods until a value has none
// or returns nil, for at most 16 layers. A value without such a method is returned as
// it is. What is done on the result is not seen by any wrapper peeled off.
func Conn(driverConn any) any {
	for range maxLayers {
		r, ok := driverConn.(interface{ Raw() driver.Conn })
		if !ok {
			return driverConn
		}
		next := r.Raw()
		if next == nil {
			return driverConn
		}
		driverConn = next
	}
	return driverConn
}

// Driver returns the innermost driver under d: it follows Unwrap() driver.Driver
// methods until a driver has none or returns nil, for at most 16 layers. A driver
// without such a method is returned as it is. Connections opened directly with the
// result bypass every wrapper peeled off.
func Driver(d driver.Driver) driver.Driver {
	for range maxLayers {
		u, ok := d.(interface{ Unwrap() driver.Driver })
		if !ok {
			return d
		}
		next := u.Unwrap()
		if next == nil {
			return d
		}
		d = next
	}
	return d
}
