package mysql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// PreviousAbsenceDDL is absenceDDL writing version v's recorder (1: without the fence
// check of red-team rt44e F2; 2: without the lookup and the collation rule of rt45a
// F1/F2): the upgrade tests install it to see the Fix replace it.
func PreviousAbsenceDDL(v int, table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	d := dialectImpl{}
	ddl := d.absenceDDL(table, key, tokenCol)
	ddl[1] = strings.Replace(ddl[1], absenceParams(absenceVersion, key), absenceParams(v, key), 1)
	ddl[1] = strings.Replace(ddl[1], d.absenceBody(absenceVersion, table, key, tokenCol), d.absenceBody(v, table, key, tokenCol), 1)
	ddl[1] = strings.Replace(ddl[1], absenceMarker, "fencedsql absence recorder v"+string(rune('0'+v)), 1)
	return ddl
}

// AbsenceDDL is absenceDDL.
func AbsenceDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	return dialectImpl{}.absenceDDL(table, key, tokenCol)
}

// AbsenceMarker is the recorder's COMMENT of this version.
const AbsenceMarker = absenceMarker
