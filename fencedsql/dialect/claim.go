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

// LocatorChecker is implemented by dialects whose statements can name rows by a row
// locator that may not identify every table's rows: PostgreSQL's ctid, unique only
// within one physical table, and SQLite's rowid, which WITHOUT ROWID tables lack and
// a column called rowid hides. LocatorQuery yields 1 when the locator identifies
// table's rows and the session may read it (PostgreSQL: SELECT on the whole table).
//
// A PostgreSQL claim of a locking read with ORDER BY, LIMIT, OFFSET or NOWAIT finds
// its rows by ctid. A partitioned table or an inheritance parent reaches several
// physical tables, where a row of another partition can sit at a claimed row's
// locator: the claim would stamp, and return, rows the read did not select. Where the
// answer is no the wrapper refuses such a claim (ErrUnsupported), and a claim
// selected by its WHERE alone still runs. A DELETE sent as two statements (no guard
// to take it in one) is restricted to the rows its fencing UPDATE stamped, by
// locator, where the answer is yes, and to the rows carrying the token otherwise.
// The wrapper asks once per pool and table, on the first such statement with a
// token, when its lazy schema checks are on.
type LocatorChecker interface {
	LocatorQuery(table TableName) (query string, args []any)
}

// Relation is a relation name as a statement wrote it: Text, its identifiers joined by
// '.' with their quotes (the server resolves it as it resolves the statement), and
// Parts, the identifiers decoded.
type Relation struct {
	Text  string
	Parts []string
}

// ViewLockChecker is implemented by dialects whose locking reads (SELECT … FOR
// UPDATE/SHARE, LOCK IN SHARE MODE) lock the rows of the tables a view reads. Such a
// read of a view over a guarded table names no guarded table: the wrapper would send
// it as written, the rows would be locked and nothing would claim them (docs/design.md
// G10). ViewLockQuery returns a query yielding one row with 1 when rel resolves, on the
// connection, to a view that reads — directly or through other views — a table named
// like one of guarded (by name in any schema, case-insensitively: a superset), or to a
// view whose definition the session cannot read; 0 or no row otherwise (not a view,
// or no such relation). With a token, the wrapper refuses a locking read of such a
// relation (ErrUnsupported); it asks once per pool and relation name, when its lazy
// schema checks are on.
type ViewLockChecker interface {
	ViewLockQuery(rel Relation, guarded []TableName) (query string, args []any)
}
