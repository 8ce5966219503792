package postgres

import (
	"errors"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/jackc/pgx/v5/pgconn"
)

// The registry of guarded tables (dialect.Registrar): fencedsql_registry in the first
// schema of the search_path (normally public), read through the pool's search_path.

// RegistryExistsQuery lists every registry of the database (temporary schemas left
// out), each quoted and schema-qualified, when the session's search_path finds one of
// them: a second registry earlier on the path (another installer's) must not hide the
// first. When the path finds none of them, one row names the schemas that hold them
// (RegistryElsewhere: an application role whose search_path misses the installer's
// schema); no row when the database has none.
func (dialectImpl) RegistryExistsQuery() string {
	return "WITH r AS (SELECT n.nspname, c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace " +
		"WHERE c.relname = '" + dialect.RegistryTable + "' AND c.relkind IN ('r', 'p') AND n.nspname NOT LIKE 'pg\\_temp\\_%') " +
		"SELECT pg_catalog.quote_ident(r.nspname) || '." + dialect.RegistryTable + "' FROM r WHERE EXISTS (SELECT 1 FROM r v WHERE v.oid = pg_catalog.to_regclass('" + dialect.RegistryTable + "')) " +
		"UNION ALL SELECT '" + dialect.RegistryElsewhere + "' || pg_catalog.string_agg(pg_catalog.quote_ident(r.nspname), ', ') FROM r " +
		"HAVING pg_catalog.count(*) > 0 AND NOT COALESCE(pg_catalog.bool_or(r.oid = pg_catalog.to_regclass('" + dialect.RegistryTable + "')), false)"
}

// GuardedTablesQuery lists the tables that carry a trigger of the guard or of the
// tombstones (dialect.GuardFinder), each with the source of its guard trigger's
// function (GuardColumns reads the fencing columns compiled into it; empty without a
// guard trigger); pg_trigger and pg_proc are readable by every role. The source comes
// as ASCII, its UTF-8 bytes in bytea's escape format (encode(…, 'escape')): the
// server would refuse to convert its non-ASCII characters to a client_encoding such
// as LATIN1 that lacks them, and every pool on such a session would fail its first
// connection. A partition is listed for the row triggers of its own (tgparentid = 0:
// created on it, not cloned from a parent's): a partition guarded on its own while its
// root carries no guard is recorded nowhere else, and MaxToken, Recorded and the
// unlisted-table check would pass over its tokens (red-team rt60b F2). The clones of
// a guarded root's row triggers — and the statement-level TRUNCATE trigger, which
// PostgreSQL does not clone and the root's guard installs on each partition itself —
// are left to DescendantsQuery, which gives the partition its root's columns.
func (dialectImpl) GuardedTablesQuery() string {
	return "SELECT n.nspname::text, c.relname::text, COALESCE(pg_catalog.encode(pg_catalog.convert_to(pg_catalog.max(p.prosrc) FILTER (WHERE t.tgname = '" + guardTrigger + "'), 'UTF8'), 'escape'), '') " +
		"FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace " +
		"LEFT JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid " +
		"WHERE t.tgname IN ('" + strings.Join([]string{guardTrigger, guardDeleteTrigger, guardTruncateTrigger, tombDeleteTrigger, tombInsertTrigger, tombRekeyTrigger}, "', '") + "') " +
		"AND c.relkind IN ('r', 'p') AND (NOT c.relispartition OR (t.tgparentid = 0 AND t.tgname <> '" + guardTruncateTrigger + "')) AND n.nspname NOT LIKE 'pg\\_temp\\_%' GROUP BY 1, 2 ORDER BY 1, 2"
}

// GuardColumns reads the token and version columns compiled into the guard
// function's source (dialect.GuardFinder): its NULL tests, NEW."tok" IS NULL OR
// NEW."ver" IS NULL. text is in bytea's escape format (GuardedTablesQuery).
func (dialectImpl) GuardColumns(text string) (tokenCol, versionCol string, ok bool) {
	return dialect.GuardColumnsInText(unescapeBytea(text), '"')
}

// unescapeBytea decodes bytea's escape format (encode(…, 'escape')): \\ is a
// backslash, \nnn an octal byte; every other byte stands for itself.
func unescapeBytea(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == '\\' {
			b = append(b, '\\')
			i++
			continue
		}
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b = append(b, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// NoRegistry: undefined_table (42P01); the existence query (to_regclass, which needs no
// right on the table) makes it rare.
func (dialectImpl) NoRegistry(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// RegistryDDL creates the registry table when missing, readable by every role.
func (dialectImpl) RegistryDDL() []string {
	return []string{
		"CREATE TABLE IF NOT EXISTS " + dialect.RegistryTable + ` (table_name text COLLATE "C" PRIMARY KEY, token_column text NOT NULL, version_column text NOT NULL)`,
		// Every fenced pool reads it; only its owner writes it.
		"REVOKE ALL ON " + dialect.RegistryTable + " FROM PUBLIC",
		"GRANT SELECT ON " + dialect.RegistryTable + " TO PUBLIC",
	}
}

// RegisterQuery records one guarded table.
func (dialectImpl) RegisterQuery(table, tokenCol, versionCol string) (string, []any) {
	return "INSERT INTO " + dialect.RegistryTable + " (table_name, token_column, version_column) VALUES ($1, $2, $3) ON CONFLICT (table_name) DO UPDATE SET token_column = EXCLUDED.token_column, version_column = EXCLUDED.version_column",
		[]any{table, tokenCol, versionCol}
}

var (
	_ dialect.Registrar   = dialectImpl{}
	_ dialect.GuardFinder = dialectImpl{}
)

// relativeRoots is the query text yielding the oids of the tables a guard names: for a
// qualified name the one table it resolves to (to_regclass); for an unqualified one
// every table of that name, in every schema — an unqualified guard guards the table of
// its name whatever its qualifier, so the partitions, children and parents of each are
// its relatives, not only those of the table the pool's search_path finds (red-team
// rt24b F9: a tenant schema's partition written by its name went unfenced). The name is
// folded and truncated as the server reads an unquoted identifier (parse_ident, then
// the cast to name).
func relativeRoots(table dialect.TableName) string {
	if table.Schema != "" {
		return `SELECT pg_catalog.to_regclass($1)::pg_catalog.oid`
	}
	return `SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.=) ((pg_catalog.parse_ident($1))[1])::pg_catalog.name`
}

// DescendantsQuery lists table's partitions and inheritance children, at every level
// (dialect.DescendantFinder); for an unqualified name, those of every table of that
// name (relativeRoots).
func (dialectImpl) DescendantsQuery(table dialect.TableName) (query string, args []any) {
	return `WITH RECURSIVE r(oid) AS (` + relativeRoots(table) + `),
d(oid) AS (
  SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN r ON i.inhparent = r.oid
  UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN d ON i.inhparent = d.oid)
SELECT n.nspname::text, c.relname::text FROM d JOIN pg_catalog.pg_class c ON c.oid = d.oid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace ORDER BY 1, 2`, []any{regclass(table)}
}

// AncestorsQuery lists the inheritance parents and partitioned roots, at every level,
// of table and of each of its descendants, other than table and its descendants
// themselves (dialect.AncestorFinder): with multiple inheritance a child of the guarded
// table has other parents, whose UPDATE and DELETE reach the child's rows (red-team
// rt24b F6). For an unqualified name, those of every table of that name
// (relativeRoots).
func (dialectImpl) AncestorsQuery(table dialect.TableName) (query string, args []any) {
	return `WITH RECURSIVE r(oid) AS (` + relativeRoots(table) + `),
t(oid) AS (
  SELECT r.oid FROM r
  UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN t ON i.inhparent = t.oid),
a(oid) AS (
  SELECT i.inhparent FROM pg_catalog.pg_inherits i JOIN t ON i.inhrelid = t.oid
  UNION SELECT i.inhparent FROM pg_catalog.pg_inherits i JOIN a ON i.inhrelid = a.oid)
SELECT n.nspname::text, c.relname::text FROM a JOIN pg_catalog.pg_class c ON c.oid = a.oid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE a.oid NOT IN (SELECT t.oid FROM t WHERE t.oid IS NOT NULL) ORDER BY 1, 2`, []any{regclass(table)}
}

var (
	_ dialect.DescendantFinder = dialectImpl{}
	_ dialect.AncestorFinder   = dialectImpl{}
)
