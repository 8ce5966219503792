package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// PreviousGuardFunctionsDDL re-creates table's guard functions as the previous version
// wrote them (guard v7 and fence v4, whose floor slow path took READ UNCOMMITTED for a
// snapshot level: red-team rt58b F2): the upgrade test installs them over this
// version's.
func PreviousGuardFunctionsDDL(table dialect.TableName, tokenCol, versionCol string) []string {
	d := dialectImpl{}
	table = fold(table)
	ddl := []string{withFloorTable(d.guardTriggerDDL(guardVersionNumber-1, table, tokenCol, versionCol))}
	for _, f := range d.fenceFuncDDL(table, tokenCol) {
		f = strings.ReplaceAll(strings.Replace(f, floorSlowRead, floorSlowReadBefore, 1), oneStepMarker, oneStepMarkerBefore)
		ddl = append(ddl, withFloorTable(f))
	}
	return ddl
}
