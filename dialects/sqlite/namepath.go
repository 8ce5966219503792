package sqlite

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// NamePathQuery implements dialect.NamePather: an unqualified name resolves in the
// temp database, then main, then the attached databases in the order they were
// attached. A connection hook (modernc's, mattn's ConnectHook) may ATTACH databases,
// or create TEMP tables, on some connections and not others — or differently since
// the pool opened — so the wrapper compares each connection's databases (name and
// file, in order) and temporary tables and views with the pool's once, and checks a
// connection that differs on its own (docs/design.md G13, red-team rt40b F2).
func (dialectImpl) NamePathQuery() string {
	return namePathQuery
}

const namePathQuery = "SELECT (SELECT group_concat(d.name || '=' || d.file, char(10)) FROM (SELECT name, file FROM pragma_database_list ORDER BY seq) d)" +
	" || char(10) || '--' || char(10) || " +
	"coalesce((SELECT group_concat(t.name, char(10)) FROM (SELECT name FROM temp.sqlite_master WHERE type IN ('table', 'view') ORDER BY name) t), '')"

var _ dialect.NamePather = dialectImpl{}
