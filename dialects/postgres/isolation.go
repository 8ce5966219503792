package postgres

// snapshotLevel is the SQL condition "this transaction reads every statement from one
// snapshot" (REPEATABLE READ, SERIALIZABLE), which every stock object and statement of
// this package that judges the isolation level tests (red-team rt58b): the absence
// recorder (a wait it cannot see past is a claim conflict), the tombstone function (the
// count of the rows the snapshot sees), the guard's and the fence's floor slow path (the
// greater of the table and its copy) and the tombstone carry-over (refused). It is
// false under READ COMMITTED and READ UNCOMMITTED, which PostgreSQL runs as READ
// COMMITTED (a fresh snapshot per statement): rt58b F1/F2 found READ UNCOMMITTED judged
// as a snapshot level (a claim conflict and a floor refusal without cause). Any other
// value counts as a snapshot level (the stricter judgement). The operator is named
// with its schema: the guard functions and the carry-over run under the caller's
// search_path.
const snapshotLevel = "pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.<>) ALL (ARRAY['read committed', 'read uncommitted'])"

// snapshotLevelBefore is the condition as the objects installed before rt58b spell it
// (READ COMMITTED alone taken for a statement-snapshot level), with op the inequality
// operator as each wrote it ("<>" under a pinned search_path, else op("<>")'s text):
// the texts of those versions, which this one still recognises as its own until the
// Fix re-creates them.
func snapshotLevelBefore(op string) string {
	return "pg_catalog.current_setting('transaction_isolation') " + op + " 'read committed'"
}
