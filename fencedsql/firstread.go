package fencedsql

import "context"

// firstReadErr is the one rule for a query of the pool's first-connection work (open)
// that failed with err: the session check before the records, the registry and guard
// trigger reads, the partitions and inheritance relatives, the catalog views (the
// listed-table check, checkListed, follows it through checkQueryErr). table and
// problem name what was asked.
//
//   - Cut — ctx ended, the connection failed under the query, or the query waited
//     for a lock the server did not grant (cutCheck: a network blip, a server
//     restart, a proxy timeout, a busy SQLite database) — it is a *CheckCutError,
//     whatever the schema check says: nothing was read, the first-connection work is
//     not marked done, and the next connection asks again (red-team rt46c F4: with the
//     schema check off a cut read was logged and the set-up marked done for the life
//     of the pool, which then never read the registry, the relatives or the catalog
//     views, and a stale write to a table the database records as guarded landed).
//   - Otherwise, with the schema check off (WithSchemaCheck(false): a mock driver
//     answers none of these queries), a warning and nil: the pool goes on with what it
//     otherwise knows.
//   - Otherwise a *SchemaError (checkQueryErr).
func (k *core) firstReadErr(ctx context.Context, table, problem string, err error) error {
	if cut := cutCheck(ctx, k.dialect, table, problem, err); cut != nil {
		return cut
	}
	if !k.cfg.schemaCheck {
		k.cfg.logger.WarnContext(ctx, "fencedsql: "+problem+"; with the schema check off the pool goes on", "table", table, "error", err.Error())
		return nil
	}
	return checkQueryErr(ctx, k.dialect, table, problem, err)
}
