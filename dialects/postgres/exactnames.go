package postgres

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// regclass is table as a regclass text names it (the argument of to_regclass, a
// ::regclass cast, parse_ident): a part the catalog spelled (dialect.TableName's
// ExactSchema, ExactName) quoted as it is, so that a schema resolved through the
// search_path to "odd sch", "Mixed", "a.b" or "q""uote" is that schema — unquoted,
// to_regclass refused it (42602), folded it to another schema or read its dot as a
// qualifier (red-team rt56d F4); a part as the application wrote it stays unquoted,
// for the server to fold.
func regclass(table dialect.TableName) string {
	return table.Text(dialectImpl{}.QuoteIdent)
}
