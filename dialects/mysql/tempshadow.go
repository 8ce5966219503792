package mysql

import (
	"context"
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TempShadow implements dialect.TempShadowFinder: SHOW CREATE TABLE resolves the name
// as the session's statements do (a temporary table first, qualified or not) and
// spells a temporary table's DDL CREATE TEMPORARY TABLE. A name that resolves to
// nothing (error 1146) is no temporary table; the lazy check reports it missing.
func (d dialectImpl) TempShadow(ctx context.Context, q dialect.CatalogQuery, t dialect.TableName) (bool, error) {
	rows, err := q(ctx, "SHOW CREATE TABLE "+t.Quote(d.QuoteIdent))
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1146 {
			return false, nil
		}
		return false, err
	}
	for _, r := range rows {
		if len(r) >= 2 && strings.HasPrefix(strings.ToUpper(strings.TrimSpace(r[1])), "CREATE TEMPORARY") {
			return true, nil
		}
	}
	return false, nil
}

var _ dialect.TempShadowFinder = dialectImpl{}
