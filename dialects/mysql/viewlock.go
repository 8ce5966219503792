package mysql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ViewLockQuery yields 1 when rel (db.name, or name in the connection's database) is a
// view whose definition names, directly or through the views it names, a table named
// like one of guarded, or a view whose definition the account cannot read (SHOW VIEW)
// (dialect.ViewLockChecker). The server stores a view's definition with every table
// qualified and quoted (`db`.`t`): a view reads another when its definition holds that
// one's quoted name, and a guarded table when it holds `name` (any database, any case:
// a superset), as the side-door finder reads them (views).
func (dialectImpl) ViewLockQuery(rel dialect.Relation, guarded []dialect.TableName) (query string, args []any) {
	if len(guarded) == 0 || len(rel.Parts) == 0 {
		return `SELECT 0`, nil
	}
	schema, name := "", rel.Parts[len(rel.Parts)-1]
	if len(rel.Parts) >= 2 {
		schema = rel.Parts[len(rel.Parts)-2]
	}
	args = []any{schema, name}
	var names strings.Builder
	for _, g := range guarded {
		names.WriteString(" OR LOCATE(?, v.def) > 0") // quoted here, not by CONCAT (collation.go)
		args = append(args, "`"+strings.ReplaceAll(g.Name, "`", "``")+"`")
	}
	return noRecursionLimit + "WITH RECURSIVE v (s, n, def, depth) AS (" +
		"SELECT TABLE_SCHEMA, TABLE_NAME, COALESCE(VIEW_DEFINITION, ''), 0 FROM information_schema.VIEWS " +
		"WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME = ? " +
		"UNION ALL SELECT w.TABLE_SCHEMA, w.TABLE_NAME, COALESCE(w.VIEW_DEFINITION, ''), v.depth + 1 FROM v JOIN information_schema.VIEWS w " +
		"ON LOCATE(CONCAT('`', REPLACE(w.TABLE_SCHEMA, '`', '``'), '`.`', REPLACE(w.TABLE_NAME, '`', '``'), '`'), v.def) > 0 WHERE v.depth < 16) " +
		"SELECT CASE WHEN EXISTS (SELECT 1 FROM v WHERE v.def = ''" + names.String() + ") THEN 1 ELSE 0 END", args
}

var _ dialect.ViewLockChecker = dialectImpl{}
