package sqlite

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TempTable implements dialect.TempTableFinder: an unqualified name resolves to the
// temp schema's table or view of that name first (then main's, then the attached
// databases'); a name qualified with temp is one; one qualified otherwise is not.
func (dialectImpl) TempTable(ctx context.Context, q dialect.CatalogQuery, t dialect.TableName) (bool, error) {
	if t.Schema != "" {
		return sameName(t.Schema, "temp"), nil
	}
	rows, err := q(ctx, `SELECT count(*) FROM sqlite_temp_master WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE`, t.Name)
	if err != nil {
		return false, err
	}
	return len(rows) == 1 && len(rows[0]) == 1 && rows[0][0] != "" && rows[0][0] != "0", nil
}

var _ dialect.TempTableFinder = dialectImpl{}
