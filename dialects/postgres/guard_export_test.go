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

// PreviousGuardDeleteTriggerDDL re-creates table's guard DELETE trigger with the WHEN
// clause the release before red-team rt59b F1 wrote (the statement setting compared
// bare, so that an undefined one reached the token's cast): the upgrade test installs it
// over this version's.
func PreviousGuardDeleteTriggerDDL(table dialect.TableName, tokenCol string) []string {
	d := dialectImpl{}
	table = fold(table)
	tbl := table.Quote(d.QuoteIdent)
	when := "WHEN ((pg_catalog.current_setting('" + deleteStmtSetting + "', true) OPERATOR(pg_catalog.=) " + markedStatement(d, table) +
		" AND OLD." + d.QuoteIdent(tokenCol) + op("<=") + "pg_catalog.current_setting('" + deleteTokenSetting + "', true)::pg_catalog.int8) IS NOT TRUE) "
	return []string{
		"DROP TRIGGER " + guardDeleteTrigger + " ON " + tbl,
		"CREATE TRIGGER " + guardDeleteTrigger + " AFTER DELETE ON " + tbl + " FOR EACH ROW " + when + "EXECUTE FUNCTION " + guardFuncName(table).Quote(d.QuoteIdent) + "()",
		"ALTER TABLE " + tbl + " ENABLE ALWAYS TRIGGER " + guardDeleteTrigger,
	}
}
