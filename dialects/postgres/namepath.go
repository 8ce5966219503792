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

// NamePathQuery implements dialect.NamePather.
func (dialectImpl) NamePathQuery() string {
	return "SELECT " + namePathColumn
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

var (
	_ dialect.NamePather      = dialectImpl{}
	_ dialect.NamePathTracker = dialectImpl{}
)
