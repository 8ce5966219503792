package dialect

import (
	"context"
	"database/sql/driver"
)

// NamePather is implemented by a dialect whose connections may resolve an unqualified
// table name differently from one another without any statement through the pool: a
// default set outside the wrapper that a connection takes when it opens (PostgreSQL:
// ALTER DATABASE/ROLE … SET search_path or role, the DSN's options, a pooler between;
// MySQL/MariaDB: the default database; SQLite: databases ATTACHed, or TEMP tables
// made, by a connection hook). NamePathQuery returns a query whose single text value
// identifies the session's resolution: two sessions that return the same value
// resolve every unqualified name to the same relation (as long as the schemas do not
// change). The wrapper runs it once per connection, before the connection first uses
// a name verdict the pool cached, and caches a connection's verdicts on the
// connection when its value differs from the one the pool's verdicts were made under
// (docs/design.md G13). It must read no table the application owns, and hold no
// backslash, double quote or byte of 0x80 and above (a single-quoted literal without
// a backslash reads alike in every session). A ServerIdentifier's query returns a
// second column, the server's identity.
type NamePather interface {
	NamePathQuery() string
}

// NamePathTracker is implemented by a NamePather that can give the value of
// NamePathQuery for raw without a query of the wrapper's (pgx: read together with a
// setting the session check reads once per connection anyway). ok is false when it
// cannot; the wrapper then runs NamePathQuery. ctx is the statement's, under which a
// read of the tracker's own runs (as SessionTracker's).
type NamePathTracker interface {
	TrackedNamePath(ctx context.Context, raw driver.Conn) (value string, ok bool)
}
