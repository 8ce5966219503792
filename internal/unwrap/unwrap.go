// Package unwrap peels wrapper layers off database/sql driver values: the fenced
// driver's, github.com/XSAM/otelsql's, any layer that exposes what it wraps the same
// way. It is the one implementation behind fencedsql.Unwrap and fencedsql.UnwrapDriver,
// and lets packages that must not import fencedsql (lockclient and its backends)
// recognise a wrapped pool.
package unwrap

import (
	"database/sql/driver"
	"reflect"
)

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

// ConnForwarded returns what Conn returns — the innermost connection under
// driverConn — and whether every layer peeled off on the way is a known forwarder: a
// connection type whose code is known to run nothing of its own on a connection's
// reuse (driver.SessionResetter) but to hand the call to what it wraps, and to expose
// through Raw() the very connection it sends statements to (knownForwarder:
// github.com/XSAM/otelsql's). A layer of any other type may run its own ResetSession —
// set search_path or sql_mode for the checkout's tenant, reconnect to a new primary
// and expose the new connection — which a judgement of the innermost connection alone
// does not see (red-team rt45c F5, F6): a reuse judge (dialect.ResetJudge) must
// answer "the session may have changed" when forwarded is false. driverConn itself
// counts as a layer when it has a Raw() method; a value without one is returned with
// forwarded true (nothing was peeled). A chain deeper than 16 layers, or a Raw()
// returning nil under a layer, answers false.
func ConnForwarded(driverConn any) (bottom any, forwarded bool) {
	forwarded = true
	for range maxLayers {
		r, ok := driverConn.(interface{ Raw() driver.Conn })
		if !ok {
			return driverConn, forwarded
		}
		next := r.Raw()
		if next == nil {
			return driverConn, false
		}
		if !knownForwarder(driverConn) {
			forwarded = false
		}
		driverConn = next
	}
	return driverConn, false
}

// knownForwarder reports whether layer is a connection type known to forward a
// reuse's ResetSession to the connection its Raw() returns and to run no code of its
// own that can change that connection's session: otelsql's *otConn (it records a span
// and a metric around the inner ResetSession, and returns the one connection it
// wraps). Matched by its package path and type name, so that a fork or a renamed
// copy — whose code was not read — does not match.
func knownForwarder(layer any) bool {
	t := reflect.TypeOf(layer)
	if t == nil || t.Kind() != reflect.Pointer {
		return false
	}
	e := t.Elem()
	return e.PkgPath() == otelsqlPkg && e.Name() == "otConn"
}

// otelsqlPkg is github.com/XSAM/otelsql's import path.
const otelsqlPkg = "github.com/XSAM/otelsql"
