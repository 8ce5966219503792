package postgres

import (
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// PreviousTombstoneFunctionDDL is the statement that re-creates table's tombstone
// function as the previous version (v11, which recorded a deletion at the row's token
// and the one-statement DELETE's mark only, not at the transaction's recorded token:
// red-team rt59b F2, F3) wrote it: the upgrade tests install it over this version's.
func PreviousTombstoneFunctionDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) string {
	d := dialectImpl{}
	table = dialect.TableName{Schema: tombSchema(table), Name: dialect.LowerASCII(table.Name)}
	body := d.tombBody(tombVersionNumber-1, table, key, tokenCol)
	tag := dollarTag(body)
	return "CREATE OR REPLACE FUNCTION " + tombFuncName(table).Quote(d.QuoteIdent) + "() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS " + tag + body + tag
}
