package postgres

import (
	"context"
	"database/sql/driver"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Name resolution per connection (dialect.NamePather, docs/design.md G13). An
// unqualified name resolves through the session's effective search_path:
// current_schemas(true) — the schemas of search_path that exist, "$user" expanded for
// the session's current_user, pg_catalog where the path puts it (first when it is not
// listed), and the session's temporary schema once it has one. A connection takes its
// search_path (and its role, which "$user" names) from defaults set outside the
// wrapper — ALTER DATABASE/ROLE … SET search_path or role, ALTER ROLE … IN DATABASE …
// SET, the DSN's options=-csearch_path=… or a pooler's startup parameters — which
// another client can change while the pool runs, so connections opened later may
// resolve a guarded name to another schema's table (red-team rt40b F2). The wrapper
// compares each connection's value with the pool's once, and checks a connection that
// differs on its own. The array's text form quotes names as needed, so two paths give
// the same text only when they list the same schemas in the same order.

// namePathColumn reads the session's effective search_path, qualified so that no
// function or type of a schema the path lists first is called.
const namePathColumn = "pg_catalog.current_schemas(true)::pg_catalog.text"

// namePathKey is the pgconn.PgConn.CustomData key under which syncCommitOf keeps
// namePathColumn's value, read with synchronous_commit once per connection.
const namePathKey = "fencedsql.postgres.name_path"

// NamePathQuery implements dialect.NamePather and dialect.ServerIdentifier: the name
// resolution, then the server's identity (serverIdentityColumn).
func (dialectImpl) NamePathQuery() string {
	return "SELECT " + namePathColumn + ", " + serverIdentityColumn
}

// TrackedNamePath implements dialect.NamePathTracker under pgx: the value read with
// synchronous_commit (syncCommitOf: no round trip once the session check has run on
// the connection, one otherwise, which the session check then does not repeat).
func (dialectImpl) TrackedNamePath(ctx context.Context, raw driver.Conn) (string, bool) {
	pg := pgConnOf(raw)
	if pg == nil || pg.CustomData() == nil {
		return "", false
	}
	if v, ok := pg.CustomData()[namePathKey].(string); ok {
		return v, true
	}
	if _, ok := syncCommitOf(ctx, pg); !ok {
		return "", false
	}
	v, ok := pg.CustomData()[namePathKey].(string)
	return v, ok
}

// serverIdentityColumn reads the server's identity (dialect.ServerIdentifier): the
// postmaster's start time, in UTC to the microsecond whatever the session's TimeZone
// and DateStyle, and the port it listens on. A promoted replica has its own start
// time (it was started as a standby); the system identifier, which a physical replica
// shares with its primary, would not tell them apart (and pg_control_system() may be
// revoked from PUBLIC). Both functions are executable by any role.
const serverIdentityColumn = "pg_catalog.to_char(pg_catalog.timezone('UTC', pg_catalog.pg_postmaster_start_time()), 'YYYYMMDDHH24MISSUS') OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) COALESCE(pg_catalog.inet_server_port()::pg_catalog.text, '')"

// serverIdentityKey is the pgconn.PgConn.CustomData key under which syncCommitOf keeps
// serverIdentityColumn's value, read with synchronous_commit once per connection.
const serverIdentityKey = "fencedsql.postgres.server_identity"

// TrackedServerIdentity implements dialect.ServerIdentifier under pgx: the value read
// with synchronous_commit and the name path (syncCommitOf), as TrackedNamePath's.
func (dialectImpl) TrackedServerIdentity(ctx context.Context, raw driver.Conn) (string, bool) {
	pg := pgConnOf(raw)
	if pg == nil || pg.CustomData() == nil {
		return "", false
	}
	if v, ok := pg.CustomData()[serverIdentityKey].(string); ok {
		return v, true
	}
	if _, ok := syncCommitOf(ctx, pg); !ok {
		return "", false
	}
	v, ok := pg.CustomData()[serverIdentityKey].(string)
	return v, ok
}

var (
	_ dialect.NamePather       = dialectImpl{}
	_ dialect.NamePathTracker  = dialectImpl{}
	_ dialect.ServerIdentifier = dialectImpl{}
)
