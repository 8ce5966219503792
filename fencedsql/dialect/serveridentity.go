package dialect

import (
	"context"
	"database/sql/driver"
)

// ServerIdentifier is implemented by a NamePather whose connections can tell which
// server they reached (docs/design.md G14, "The server behind a running pool"): after a
// failover the pool's DSN reaches another server — the promoted replica — whose
// catalog may differ from the one the pool's cached verdicts were read on (a guard's
// installation lost with the asynchronous tail), so the wrapper trusts a verdict only
// on a connection to the server it was made on, and reads again what the database
// records as guarded when the pool's connections reach another server.
//
// Its NamePathQuery returns a second text column: the server's identity, equal on
// every connection to one running server and different on any other server of the
// same replication set-up (a promoted replica included); a restart may change it (the
// pool then checks again). It is read with the name resolution, once per connection:
// no round trip is added. It must need no privilege an application account lacks.
// TrackedServerIdentity returns it for raw as read with TrackedNamePath (a
// NamePathTracker's), without a query of the wrapper's; ok is false when raw keeps
// none, and the wrapper then runs NamePathQuery. A single-column answer (a mock
// answering NamePathQuery as before) leaves the identity unknown: the connection is
// then taken for one to the server the pool's verdicts were made on.
type ServerIdentifier interface {
	NamePather
	TrackedServerIdentity(ctx context.Context, raw driver.Conn) (identity string, ok bool)
}
