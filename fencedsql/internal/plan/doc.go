// Package plan is fencedsql's statement planner: a pure function from a statement's
// text, the guarded tables and the dialect's lexical rules to a Plan — send the text
// unchanged, send a fenced version of it (with the arguments it draws from the
// caller's, the fencing token and the expected version), run a fencing UPDATE first
// (DELETE, claimed locking reads), or refuse it with a *Refusal that says why.
//
// It holds the parser over sqllex's tokens, the router that picks a planner per
// statement kind (INSERT, upsert, UPDATE, multi-table UPDATE, DELETE, locking reads,
// EXPLAIN, read-only statements, routine and executable-comment handling), the SQL
// builder, the backstop that refuses any unplanned write naming a guarded table, the
// guards of the guards' own objects, and the stable/exact checks of two-statement plans.
// It sends nothing and imports neither database/sql nor database/sql/driver: package
// fencedsql builds a Planner from its configuration (New), caches plans per statement
// text, executes them on connections, and turns a *Refusal into its ErrUnsupported.
//
// Plans are immutable and may be shared between goroutines; a Planner is safe for
// concurrent use.
package plan
