package mysql

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// NamePathQuery implements dialect.NamePather: an unqualified name resolves in the
// session's default database (a temporary table of the name first: TempShadow). The
// DSN names it, but a connection may open in another one the pool never saw a USE for
// — init_connect, a proxy that picks the schema — so the wrapper compares each
// connection's with the pool's once, and checks a connection that differs on its own
// (docs/design.md G13, red-team rt40b F2). The name is read as binary: the server
// does not convert it to character_set_results.
func (dialectImpl) NamePathQuery() string {
	return "SELECT CAST(DATABASE() AS BINARY)"
}

var _ dialect.NamePather = dialectImpl{}
