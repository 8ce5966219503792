package mysql

// catalogViewsQuery lists the views outside the server's system databases (mysql,
// information_schema, performance_schema, sys) whose definition names a table of one
// of them, or another view so listed, at any depth, in every database the account
// sees views of. The server stores a view's definition with every table qualified and
// backquoted (`mysql`.`proc`), which is what is searched for. An updatable view whose
// definition the account may not read (no SHOW VIEW: VIEW_DEFINITION is empty) is
// listed too, reaching "": with SQL SECURITY DEFINER a write through it runs with its
// definer's rights, whatever the account's.
//
// Views over the guards' own tables are listed the same way (red-team rt40a F2): a
// definition naming `db`.`fencedsql_tomb_…` or `db`.`fencedsql_floor…` (or the SQL lock
// backend's token counter `fencedsql_locks…_token`), in any database, reaches that
// table (reported as "db.name"): a write through it (DELETE FROM v, UPDATE v SET floor
// = 0) erases tombstones or lowers the floor under a name the pool's guard-prefix rule
// does not see, so the pool refuses it like a write to the guard table itself, and
// refuses the DDL that would make a view over such a view (guardViews reports them).
//
// Names are carried as binary strings, so the recursive UNION and the final GROUP BY
// keep every view: under information_schema's collation (accent- and
// case-insensitive) views `cafe` and `café`, or `V` and `v` in case-twin databases,
// were one row, and the planner, which keys a view by its lower-cased name, refused
// writes through only one of them. The search of one view's name in another's
// definition stays case-insensitive (a wider match lists more views: fail closed).
const catalogViewsQuery = noRecursionLimit + "WITH RECURSIVE reach (s, n, reached) AS (" +
	" SELECT CAST(TABLE_SCHEMA AS BINARY), CAST(TABLE_NAME AS BINARY), CAST(CASE" +
	"  WHEN LOCATE('`mysql`.', LOWER(VIEW_DEFINITION)) > 0 THEN 'mysql.*'" +
	"  WHEN LOCATE('`information_schema`.', LOWER(VIEW_DEFINITION)) > 0 THEN 'information_schema.*'" +
	"  WHEN LOCATE('`performance_schema`.', LOWER(VIEW_DEFINITION)) > 0 THEN 'performance_schema.*'" +
	"  WHEN LOCATE('`sys`.', LOWER(VIEW_DEFINITION)) > 0 THEN 'sys.*'" +
	"  WHEN LOWER(VIEW_DEFINITION) REGEXP " + guardViewPattern + " THEN REPLACE(REPLACE(REGEXP_SUBSTR(LOWER(VIEW_DEFINITION), " + guardViewPattern + "), '`.`', '.'), '`', '')" +
	"  ELSE '' END AS BINARY)" +
	" FROM information_schema.VIEWS" +
	" WHERE LOWER(TABLE_SCHEMA) NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') AND (" +
	"  LOCATE('`mysql`.', LOWER(VIEW_DEFINITION)) > 0 OR LOCATE('`information_schema`.', LOWER(VIEW_DEFINITION)) > 0" +
	"  OR LOCATE('`performance_schema`.', LOWER(VIEW_DEFINITION)) > 0 OR LOCATE('`sys`.', LOWER(VIEW_DEFINITION)) > 0" +
	"  OR LOWER(VIEW_DEFINITION) REGEXP " + guardViewPattern +
	"  OR COALESCE(VIEW_DEFINITION, '') = '' AND IS_UPDATABLE = 'YES')" +
	" UNION" +
	" SELECT CAST(v.TABLE_SCHEMA AS BINARY), CAST(v.TABLE_NAME AS BINARY), r.reached" +
	" FROM information_schema.VIEWS v JOIN reach r" +
	"  ON LOCATE(CONVERT(CONCAT('`', REPLACE(r.s, '`', '``'), '`.`', REPLACE(r.n, '`', '``'), '`') USING utf8mb4), CONVERT(v.VIEW_DEFINITION USING utf8mb4)) > 0" +
	" WHERE LOWER(v.TABLE_SCHEMA) NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')" +
	")" +
	" SELECT s, n, MAX(reached) FROM reach GROUP BY s, n ORDER BY s, n"

// guardViewPattern matches, in a lower-cased view definition, a guard table the view
// reads: `db`.`fencedsql_tomb_…`, `db`.`fencedsql_floor…`, `db`.`fencedsql_locks…_token`.
const guardViewPattern = "'`[^`]*`[.]`fencedsql_(tomb_[^`]*|floor[^`]*|locks[^`]*_token)`'"

// CatalogViewsQuery implements dialect.CatalogViewFinder.
func (dialectImpl) CatalogViewsQuery() (string, []any) { return catalogViewsQuery, nil }
