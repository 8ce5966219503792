package mysql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// PreviousAbsenceDDL is absenceDDL writing the previous version's recorder (v1, without
// the fence check of red-team rt44e F2): the upgrade tests install it to see the Fix
// replace it.
func PreviousAbsenceDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	d := dialectImpl{}
	ddl := d.absenceDDL(table, key, tokenCol)
	tomb, list := tombTable(table).Quote(d.QuoteIdent), d.keyList(key)
	ddl[1] = strings.Replace(ddl[1], absenceBody(tomb, list, len(key), table.Name, tokenCol), absenceBodyOf(1, tomb, list, len(key), table.Name, tokenCol), 1)
	ddl[1] = strings.Replace(ddl[1], absenceMarker, "fencedsql absence recorder v1", 1)
	return ddl
}

// AbsenceDDL is absenceDDL.
func AbsenceDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	return dialectImpl{}.absenceDDL(table, key, tokenCol)
}
