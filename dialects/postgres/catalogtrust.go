package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Catalog trust (docs/design.md G11, red-team rt52a F1, F2). The lazy check's and
// schema.Check's catalog reads, the session check and the rewrites' own SQL call
// functions (to_regclass, format, current_setting, …) and operators (=, &, ||, LIKE's
// ~~, …) that PostgreSQL looks up by name through the session's search_path. Two ways
// let a role with CREATE on a schema of that path answer in pg_catalog's place — and
// hide a door (a BEFORE trigger restoring the token, an updatable view) from the only
// check that sees it:
//
//   - a path that lists another schema before pg_catalog (a DSN, role or database
//     default): a function or operator of the same signature there wins;
//   - even with pg_catalog first, a function or operator of another signature that
//     matches the arguments better (exactly) wins over pg_catalog's, which needs a
//     coercion: public.&(smallint, integer) over pg_catalog's &(int2,int2) and
//     &(int4,int4) for `tgtype & 3`; public.=(oid, regclass) for `refclassid =
//     '…'::regclass` (PostgreSQL docs §10.2, step 2).
//
// So a session is trusted only when (catalogTrustColumn) its effective path
// current_schemas(true) starts with pg_catalog (after the session's own temporary
// schema, which is never searched for functions or operators), and no other schema
// on the path holds a function named as one of pg_catalog's the library calls
// (shadowFunctions) or an operator named as one it uses (shadowOperators) with
// argument types of pg_catalog's own (scalar built-in types, int2vector, oidvector,
// polymorphic pseudo-types, or a domain) and a signature pg_catalog does not have.
// Functions and operators over an extension's own types (citext, PostGIS, hstore) or
// arrays (intarray) never match the library's catalog arguments and are not refused;
// nor is a same-signature twin (pgcrypto's gen_random_uuid()), which pg_catalog first
// on the path wins. The verdict is read once per connection with the session check
// (no round trip of its own: syncCommitColumns) and refused with a *SessionError; the
// lazy check and schema.Check read it again before their door queries
// (catalogTrust), on the connection they read the catalog through. The door queries
// also qualify the functions and the operators whose operand types pg_catalog serves
// only through a coercion (pg_catalog.to_regclass, OPERATOR(pg_catalog.&),
// ::pg_catalog.regclass).

// shadowFunctions are the pg_catalog functions the library's SQL calls.
var shadowFunctions = []string{
	"aclexplode", "array_agg", "array_position", "array_to_string", "bool_or", "cardinality", "chr",
	"clock_timestamp", "concat", "concat_ws", "convert_to", "count", "current_database", "current_query",
	"current_schema", "current_schemas", "current_setting", "decode", "encode", "floor", "format",
	"format_type", "has_any_column_privilege", "has_database_privilege", "has_function_privilege",
	"has_schema_privilege", "has_sequence_privilege", "has_table_privilege", "json_agg",
	"json_build_object", "json_each", "jsonb_populate_record", "left", "length", "lower",
	"make_interval", "max", "md5", "min", "now", "octet_length", "oidvectortypes", "parse_ident",
	"pg_advisory_xact_lock", "pg_backend_pid", "pg_current_xact_id", "pg_get_constraintdef",
	"pg_get_expr", "pg_get_function_identity_arguments", "pg_get_functiondef", "pg_get_indexdef",
	"pg_get_ruledef", "pg_get_triggerdef", "pg_get_userbyid", "pg_has_role", "pg_is_in_recovery",
	"pg_my_temp_schema", "pg_options_to_table", "pg_relation_is_updatable", "pg_sequence_last_value",
	"pg_xact_status", "quote_ident", "quote_literal", "regexp_matches", "repeat", "replace",
	"row_security_active", "set_config", "setval", "split_part", "statement_timestamp", "string_agg",
	"string_to_array", "strpos", "substr", "substring", "to_regclass", "to_regprocedure",
	"to_regproc", "to_regtype", "translate", "unnest", "upper", "version",
}

// shadowOperators are the operators the library's SQL uses, spelled or implied (LIKE
// is ~~, IN and CASE x WHEN are =, BETWEEN is >= and <=).
var shadowOperators = []string{
	"=", "<>", "<", ">", "<=", ">=", "&", "|", "#", "~", "+", "-", "*", "/", "||",
	"~~", "!~~", "~~*", "!~~*", "~*", "!~", "!~*", "<<", ">>",
}

// catalogTyped is true when the type oid t is one the library's catalog arguments can
// be coerced to without an extension's type: none (a prefix operator's left side), a
// built-in scalar or pseudo-type, int2vector, oidvector, or a domain.
const catalogTyped = `(%s OPERATOR(pg_catalog.=) 0 OR EXISTS (SELECT FROM pg_catalog.pg_type y WHERE y.oid OPERATOR(pg_catalog.=) %s
    AND (y.typtype OPERATOR(pg_catalog.=) 'd' OR y.oid OPERATOR(pg_catalog.<) 16384
      AND (y.typcategory OPERATOR(pg_catalog.<>) 'A' OR y.oid OPERATOR(pg_catalog.=) ANY ('{22,30}'::pg_catalog.oid[])))))`

// pathSchemas are the schemas other than pg_catalog and the session's temporary one
// that the session's path lists.
const pathSchemas = `SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) ANY (pg_catalog.current_schemas(false))
    AND n.nspname OPERATOR(pg_catalog.<>) 'pg_catalog' AND n.oid OPERATOR(pg_catalog.<>) pg_catalog.pg_my_temp_schema()`

// catalogTrustColumn yields "<path> <shadow>" as text: path is "t" when pg_catalog
// comes first on the effective path (after the session's temporary schema), shadow
// is "t" when no schema on the path shadows a function or operator the library calls
// (see above). Every name in it is qualified.
var catalogTrustColumn = `(CASE WHEN COALESCE((pg_catalog.current_schemas(true))[1] OPERATOR(pg_catalog.=) 'pg_catalog'
  OR (pg_catalog.current_schemas(true))[1] OPERATOR(pg_catalog.=) (SELECT n.nspname FROM pg_catalog.pg_namespace n WHERE n.oid OPERATOR(pg_catalog.=) pg_catalog.pg_my_temp_schema())
    AND (pg_catalog.current_schemas(true))[2] OPERATOR(pg_catalog.=) 'pg_catalog', false) THEN 't' ELSE 'f' END
 OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) CASE WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_proc p
  WHERE p.pronamespace OPERATOR(pg_catalog.=) ANY (ARRAY(` + pathSchemas + `))
    AND p.proname OPERATOR(pg_catalog.=) ANY ('{` + strings.Join(shadowFunctions, ",") + `}'::pg_catalog.name[])
    AND NOT EXISTS (SELECT FROM pg_catalog.pg_proc c WHERE c.pronamespace OPERATOR(pg_catalog.=) 11
      AND c.proname OPERATOR(pg_catalog.=) p.proname AND c.proargtypes OPERATOR(pg_catalog.=) p.proargtypes)
    AND NOT EXISTS (SELECT FROM pg_catalog.unnest(p.proargtypes::pg_catalog.oid[]) a(t) WHERE NOT ` + typed("a.t") + `))
 AND NOT EXISTS (SELECT FROM pg_catalog.pg_operator o
  WHERE o.oprnamespace OPERATOR(pg_catalog.=) ANY (ARRAY(` + pathSchemas + `))
    AND o.oprname OPERATOR(pg_catalog.=) ANY (` + operatorArray() + `)
    AND NOT EXISTS (SELECT FROM pg_catalog.pg_operator c WHERE c.oprnamespace OPERATOR(pg_catalog.=) 11
      AND c.oprname OPERATOR(pg_catalog.=) o.oprname AND c.oprleft OPERATOR(pg_catalog.=) o.oprleft AND c.oprright OPERATOR(pg_catalog.=) o.oprright)
    AND ` + typed("o.oprleft") + ` AND ` + typed("o.oprright") + `) THEN 't' ELSE 'f' END)`

func typed(col string) string { return strings.ReplaceAll(catalogTyped, "%s", col) }

// operatorArray is shadowOperators as a pg_catalog.name[] literal.
func operatorArray() string {
	q := make([]string, len(shadowOperators))
	for i, o := range shadowOperators {
		q[i] = `"` + o + `"`
	}
	return `'{` + strings.Join(q, ",") + `}'::pg_catalog.name[]`
}

const catalogTrustFix = "put pg_catalog first on the search_path (ALTER ROLE/DATABASE … SET search_path = pg_catalog, …, or the DSN's), and drop from the schemas on it the functions and operators that shadow pg_catalog's (or move them to a schema off the application's path)"

// checkCatalogTrust judges catalogTrustColumn's value: nil when trusted, else a
// *SessionError (errors.Is ErrSchema). The one check of the session check and of
// catalogTrust.
func checkCatalogTrust(path, shadow string) error {
	switch {
	case path != "t":
		return &fencedsql.SessionError{Dialect: "postgres", Setting: "search_path", Value: "pg_catalog not first",
			Problem: "the session's effective search_path (current_schemas(true)) lists a schema before pg_catalog: a function or operator there would answer fencedsql's catalog checks in pg_catalog's place and could hide a side door",
			Fix:     catalogTrustFix}
	case shadow != "t":
		return &fencedsql.SessionError{Dialect: "postgres", Setting: "search_path", Value: "pg_catalog shadowed",
			Problem: "a schema on the session's search_path holds a function or operator named as one of pg_catalog's that fencedsql's catalog checks call, over pg_catalog's own types with a signature pg_catalog does not have: PostgreSQL would prefer it and it could hide a side door",
			Fix:     catalogTrustFix}
	}
	return nil
}

// catalogTrust is the lazy check's and schema.Check's first door finder: it reads
// catalogTrustColumn and client_encoding (clientEncodingProblem) on the connection
// the catalog is read through and refuses an untrusted one with a *SessionError
// before any door query runs.
func (dialectImpl) catalogTrust(ctx context.Context, query dialect.CatalogQuery, _ dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, "SELECT "+catalogTrustColumn+", pg_catalog.current_setting('client_encoding')")
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 || len(rows[0]) != 2 {
		return nil, &fencedsql.SessionError{Dialect: "postgres", Setting: "search_path", Value: "", Problem: "the catalog trust query returned an unexpected value", Reading: true}
	}
	f := strings.SplitN(rows[0][0], " ", 2)
	if len(f) != 2 {
		return nil, &fencedsql.SessionError{Dialect: "postgres", Setting: "search_path", Value: rows[0][0], Problem: "the catalog trust query returned an unexpected value", Reading: true}
	}
	if err := checkCatalogTrust(f[0], f[1]); err != nil {
		return nil, err
	}
	return nil, clientEncodingProblem(rows[0][1])
}
