package mysql

import (
	"context"
	"database/sql/driver"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// NamePathQuery implements dialect.NamePather: an unqualified name resolves in the
// session's default database (a temporary table of the name first: TempShadow). The
// DSN names it, but a connection may open in another one the pool never saw a USE for
// — init_connect, a proxy that picks the schema — so the wrapper compares each
// connection's with the pool's once, and checks a connection that differs on its own
// (docs/design.md G13, red-team rt40b F2). The name is read as binary: the server
// does not convert it to character_set_results. The second column is the server's
// identity (dialect.ServerIdentifier, docs/design.md G14): its server_id (distinct in
// any replication set-up: a replica ignores the events of its own), host name and
// port, "<server_id>:<hostname>:<port>", read with the name in the same round trip.
// MySQL's @@server_uuid is left out: MariaDB has no such variable, and no executable
// comment runs on MySQL only.
func (dialectImpl) NamePathQuery() string {
	return "SELECT CAST(DATABASE() AS BINARY), " + serverIdentity
}

// serverIdentity is the SQL of the server's identity, "<server_id>:<hostname>:<port>"
// as binary (NamePathQuery; the raise's session check adds the server's start instant:
// raiseServerIdentity).
const serverIdentity = "CAST(CONCAT_WS(':', @@GLOBAL.server_id, @@GLOBAL.hostname, @@GLOBAL.port) AS BINARY)"

// TrackedServerIdentity implements dialect.ServerIdentifier: the driver keeps no
// identity of the server, which NamePathQuery reads.
func (dialectImpl) TrackedServerIdentity(context.Context, driver.Conn) (string, bool) {
	return "", false
}

var (
	_ dialect.NamePather       = dialectImpl{}
	_ dialect.ServerIdentifier = dialectImpl{}
)
