package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// PreviousAbsenceDDL is absenceDDL writing version v's recorder (2: without the fence
// check of red-team rt44e F2; 3: without the collation rule of rt45a F2; 4: without
// the row-security refusal of rt48h F2): the upgrade
// tests install it to see the Fix replace it.
func PreviousAbsenceDDL(v int, table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	d := dialectImpl{}
	table = dialect.TableName{Schema: tombSchema(table), Name: dialect.LowerASCII(table.Name)}
	tomb, tbl, tok := tombTable(table).Quote(d.QuoteIdent), table.Quote(d.QuoteIdent), d.QuoteIdent(tokenCol)
	ddl := d.absenceDDL(table, key, tomb, tbl, tok)
	ddl[1] = strings.Replace(ddl[1], d.absenceBodyFor(absenceVersionNumber, key, tomb, tbl, tok), d.absenceBodyFor(v, key, tomb, tbl, tok), 1)
	return ddl
}
