package postgres

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// tempTableQuery resolves a (quoted) name as the session does (to_regclass: pg_temp
// first unless the search_path places it) and says whether it lands in the session's
// temporary schema; no row when it resolves to nothing.
const tempTableQuery = `SELECT c.relnamespace = pg_catalog.pg_my_temp_schema() FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1)`

// TempTable implements dialect.TempTableFinder.
func (d dialectImpl) TempTable(ctx context.Context, q dialect.CatalogQuery, t dialect.TableName) (bool, error) {
	rows, err := q(ctx, tempTableQuery, t.Quote(d.QuoteIdent))
	if err != nil {
		return false, err
	}
	return len(rows) == 1 && len(rows[0]) == 1 && dialect.CatalogBool(rows[0][0]), nil
}

var _ dialect.TempTableFinder = dialectImpl{}
