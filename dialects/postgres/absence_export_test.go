package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// PreviousAbsenceDDL is absenceDDL writing the previous version's recorder (v2, without
// the fence check of red-team rt44e F2): the upgrade tests install it to see the Fix
// replace it.
func PreviousAbsenceDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	d := dialectImpl{}
	table = dialect.TableName{Schema: tombSchema(table), Name: dialect.LowerASCII(table.Name)}
	tomb := tombTable(table).Quote(d.QuoteIdent)
	ddl := d.absenceDDL(table, key, tomb, table.Quote(d.QuoteIdent), d.QuoteIdent(tokenCol))
	m := absenceList.FindStringSubmatch(ddl[1])
	l := absenceLookup.FindStringSubmatch(ddl[1])
	n := len(absenceIdent.FindAllString(m[1], -1))
	cur := absenceBodyOf(absenceVersionNumber, tomb, l[1], l[3], m[1], l[2], n)
	ddl[1] = strings.Replace(ddl[1], cur, absenceBodyOf(2, tomb, l[1], l[3], m[1], l[2], n), 1)
	return ddl
}
