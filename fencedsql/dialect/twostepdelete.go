package dialect

// TwoStepDeleteChecker is implemented by a dialect whose database may let an UPDATE of
// a table reach other rows than a DELETE of it by the same condition (PostgreSQL:
// row-level security, whose policies are per command). A fenced DELETE run as two
// statements — the fencing UPDATE, then the DELETE of the rows it stamped — deletes
// only rows the UPDATE reached: a row the caller's DELETE reaches and the UPDATE does
// not is neither fenced (a stale DELETE of it gets no ErrFenced) nor deleted (a
// current one deletes nothing), and the count check, comparing the rows stamped with
// the rows deleted, sees nothing (red-team rt47i F1, F2).
//
// TwoStepDeleteQuery returns a query yielding one row: 1 when, for the session's
// role, every row a DELETE of table can reach is one its fencing UPDATE can reach
// too; otherwise 0 and, in a second column, why not (the reason of the refusal, which
// the wrapper reports as an *UnsupportedError naming the table). No row, or an
// answer it cannot read, is a no. The wrapper asks it where it would send the two
// statements of a DELETE, with the lazy schema checks on (once per table and pool,
// cached like the other table verdicts), and refuses the two statements on a no,
// before sending anything; the one-statement DELETE (dialect.DeleteFencer), which
// has no UPDATE, and every other write are not concerned.
//
// A third column, 1 when row-level security is in force on table for the session's
// role (its reads of table are filtered by policies) and 0 otherwise, is the claims'
// verdict (red-team rt48h F1): a claim of an absent key whose recorder finds a row of
// the key the claim did not see is, on such a table, the claim's read filtered by a
// policy — a condition no retry changes — and the wrapper reports it as
// ErrUnsupported naming row security instead of the retryable claim conflict. The
// wrapper asks it (cached with the DELETE's verdict) when it prepares such a claim; a
// dialect whose answer has no third column is taken as without row security.
type TwoStepDeleteChecker interface {
	TwoStepDeleteQuery(table TableName) (query string, args []any)
}
