package mysql

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// PreviousTombstoneTriggerDDL is the statements that install table's tombstone
// triggers as the previous REPLACE mark version (markVersion-1: the database's name
// converted to ascii) wrote them: the upgrade tests install them to see schema.Check
// report them and its Fix replace them.
func PreviousTombstoneTriggerDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	d := dialectImpl{}
	return d.replaceTriggers(d.tombTriggerDefs(markVersion-1, table, key, tokenCol))
}
