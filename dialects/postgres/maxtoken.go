package postgres

import (
	"errors"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/jackc/pgx/v5/pgconn"
)

// TokenTablesQuery lists the tables schema.MaxToken reads for table
// (dialect.TokenTableResolver): every ordinary or partitioned table whose name is
// table's — as written, as the server folds an unquoted identifier, or in any case (a
// quoted "Accounts" beside accounts: the wrapper matches guarded names without case) —
// in table's schema (matched as written or folded) or, unqualified, in every schema but
// the temporary ones, that has the token column (matched likewise, in any case); each
// by its exact catalog names, so that no search_path decides which one is read
// (red-team rt40c F1).
func (dialectImpl) TokenTablesQuery(table dialect.TableName, tokenCol string) (string, []any) {
	return `SELECT n.nspname::text, c.relname::text, a.attname::text
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p']::pg_catalog."char"[])
AND n.nspname OPERATOR(pg_catalog.!~~) 'pg\_temp\_%' AND n.nspname OPERATOR(pg_catalog.!~~) 'pg\_toast%'
AND ($1::text OPERATOR(pg_catalog.=) '' OR n.nspname::text OPERATOR(pg_catalog.=) ANY (ARRAY[$1::text, (pg_catalog.parse_ident(NULLIF($1::text, '')))[1]]))
AND (c.relname::text OPERATOR(pg_catalog.=) ANY (ARRAY[$2::text, (pg_catalog.parse_ident($2::text))[1]])
  OR pg_catalog.lower(c.relname::text) OPERATOR(pg_catalog.=) pg_catalog.lower($2::text))
AND (a.attname::text OPERATOR(pg_catalog.=) ANY (ARRAY[$3::text, (pg_catalog.parse_ident($3::text))[1]])
  OR pg_catalog.lower(a.attname::text) OPERATOR(pg_catalog.=) pg_catalog.lower($3::text))
ORDER BY 1, 2, 3`, []any{table.Schema, table.Name, tokenCol}
}

// UnfilteredReadStatements turns row-level security off for schema.MaxToken's
// transaction (dialect.UnfilteredReader): a read that a policy would filter then fails
// (42501) instead of hiding rows; the owner of the table (without FORCE ROW LEVEL
// SECURITY), a superuser or a BYPASSRLS role reads every row.
func (dialectImpl) UnfilteredReadStatements() []string {
	return []string{"SET LOCAL row_security = off"}
}

// RowFiltered: 42501 "query would be affected by row-level security policy".
func (dialectImpl) RowFiltered(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501" && strings.Contains(pe.Message, "row-level security")
}

var (
	_ dialect.TokenTableResolver = dialectImpl{}
	_ dialect.UnfilteredReader   = dialectImpl{}
)
