package dialect

// ClaimOneChecker is implemented by dialects whose planner can run a claimed locking
// read as one statement (PostgreSQL: a data-modifying WITH query that stamps the rows
// and returns them, the caller's SELECT reading its result). ClaimOneQuery returns a
// query yielding one row with 1 when table can be claimed that way with the same
// answer as the claiming UPDATE followed by the SELECT; 0 or no row otherwise, and the
// wrapper then sends the two statements. It says no for a table
//
//   - with a rule on UPDATE: a data-modifying WITH query cannot be rewritten into
//     several statements (DO ALSO) and a conditional DO INSTEAD rule refuses
//     RETURNING, so the one statement would fail where the two succeed;
//   - with an AFTER UPDATE trigger other than fencedsql's own: one that writes the
//     claimed rows again runs after the one statement's result is computed, but before
//     the two-statement form's SELECT reads them.
//
// The wrapper asks once per pool and table, on the first claim with a token, when its
// lazy schema checks are on.
type ClaimOneChecker interface {
	ClaimOneQuery(table TableName) (query string, args []any)
}

// LocatorChecker is implemented by dialects whose claim of a locking read with ORDER
// BY, LIMIT, OFFSET or NOWAIT finds its rows by a row locator unique only within one
// physical table (PostgreSQL's ctid). A partitioned table or an inheritance parent
// reaches several, where a row of another partition can sit at a claimed row's
// locator: the claim would stamp, and return, rows the read did not select.
// LocatorQuery yields 1 when table is neither partitioned nor has inheritance
// children; otherwise the wrapper refuses such a claim (ErrUnsupported), and a claim
// selected by its WHERE alone still runs. The wrapper asks once per pool and table,
// on the first such claim with a token, when its lazy schema checks are on.
type LocatorChecker interface {
	LocatorQuery(table TableName) (query string, args []any)
}
