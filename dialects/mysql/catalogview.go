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
const catalogViewsQuery = noRecursionLimit + "WITH RECURSIVE reach (s, n, reached) AS (" +
	" SELECT TABLE_SCHEMA, TABLE_NAME, CASE" +
	"  WHEN LOCATE('`mysql`.', LOWER(VIEW_DEFINITION)) > 0 THEN 'mysql.*'" +
	"  WHEN LOCATE('`information_schema`.', LOWER(VIEW_DEFINITION)) > 0 THEN 'information_schema.*'" +
	"  WHEN LOCATE('`performance_schema`.', LOWER(VIEW_DEFINITION)) > 0 THEN 'performance_schema.*'" +
	"  WHEN LOCATE('`sys`.', LOWER(VIEW_DEFINITION)) > 0 THEN 'sys.*'" +
	"  WHEN LOWER(VIEW_DEFINITION) REGEXP " + guardViewPattern + " THEN REPLACE(REPLACE(REGEXP_SUBSTR(LOWER(VIEW_DEFINITION), " + guardViewPattern + "), '`.`', '.'), '`', '')" +
	"  ELSE '' END" +
	" FROM information_schema.VIEWS" +
	" WHERE LOWER(TABLE_SCHEMA) NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') AND (" +
	"  LOCATE('`mysql`.', LOWER(VIEW_DEFINITION)) > 0 OR LOCATE('`information_schema`.', LOWER(VIEW_DEFINITION)) > 0" +
	"  OR LOCATE('`performance_schema`.', LOWER(VIEW_DEFINITION)) > 0 OR LOCATE('`sys`.', LOWER(VIEW_DEFINITION)) > 0" +
	"  OR LOWER(VIEW_DEFINITION) REGEXP " + guardViewPattern +
	"  OR COALESCE(VIEW_DEFINITION, '') = '' AND IS_UPDATABLE = 'YES')" +
	" UNION" +
	" SELECT v.TABLE_SCHEMA, v.TABLE_NAME, r.reached" +
	" FROM information_schema.VIEWS v JOIN reach r" +
	"  ON LOCATE(CONCAT('`', REPLACE(r.s, '`', '``'), '`.`', REPLACE(r.n, '`', '``'), '`'), v.VIEW_DEFINITION) > 0" +
	" WHERE LOWER(v.TABLE_SCHEMA) NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')" +
	")" +
	" SELECT s, n, MAX(reached) FROM reach GROUP BY s, n ORDER BY s, n"

// guardViewPattern matches, in a lower-cased view definition, a guard table the view
// reads: `db`.`fencedsql_tomb_…`, `db`.`fencedsql_floor…`, `db`.`fencedsql_locks…_token`.
const guardViewPattern = "'`[^`]*`[.]`fencedsql_(tomb_[^`]*|floor[^`]*|locks[^`]*_token)`'"

// CatalogViewsQuery implements dialect.CatalogViewFinder.
func (dialectImpl) CatalogViewsQuery() (string, []any) { return catalogViewsQuery, nil }
