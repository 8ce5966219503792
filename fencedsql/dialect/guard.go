package dialect

// Guarder is implemented by dialects that can install database-side guards: triggers
// that refuse, inside the database, writes that bypass the wrapper (an UPDATE that
// lowers the token or does not advance the version, and where the dialect can tell, a
// DELETE that did not go through the fencing UPDATE). The dialect packages of this
// module implement it; schema.Check reports a missing guard with the DDL that installs it.
type Guarder interface {
	// GuardDDL returns the statements that install the guard on table, in order.
	GuardDDL(table TableName, tokenCol, versionCol string) []string
	// UnguardDDL returns the statements that remove it.
	UnguardDDL(table TableName) []string
	// GuardInstalledQuery returns a query yielding one row with 1 when the guard is
	// installed on table, 0 or no row otherwise.
	GuardInstalledQuery(table TableName) (query string, args []any)
}

// NotNullFixer is implemented by dialects that can make an existing column NOT NULL.
// schema.Check and the lazy check before the first guarded write propose its
// statements for a nullable fencing column; a dialect without it (or returning no
// statement, like SQLite, which cannot alter a column) gets the advice to rebuild the
// table.
type NotNullFixer interface {
	// NotNullDDL returns the statements that make column of table NOT NULL (DEFAULT 0).
	// Rows holding NULL in it must be fixed first.
	NotNullDDL(table TableName, column string) []string
}

// TokenSlot stands for the statement's fencing token in the SQL fragments of a
// DeleteFencer; the planner replaces each with a token placeholder.
const TokenSlot = "\x00"

// DeleteFencer is implemented by dialects whose guard lets a fenced DELETE run as one
// statement instead of a fencing UPDATE and the DELETE (two statements, and a
// transaction of the wrapper's own when the caller has none). The one statement is the
// caller's DELETE with two fragments added:
//
//	DELETE FROM t WHERE (<condition>) AND <mark> RETURNING <check>
//
// mark is a boolean expression, true for every row, that tells the table's triggers
// which token the statement deletes under (the guard accepts the DELETE; the
// tombstone records at least that token). check is evaluated for every deleted row,
// after the row's triggers, and fails the whole statement (nothing is deleted) with
// the NOT NULL violation of tokenCol — what the wrapper reports as ErrFenced — when the
// row's token is newer than the statement's (or NULL); it names the row's token column
// unqualified. The fencing itself is check's: it holds with the triggers disabled or
// removed. In both fragments each TokenSlot stands for the token.
//
// check may be "" when mark is itself the fence: a condition, true for every row it
// accepts, that fails the statement as check would (the statement is then DELETE FROM
// t WHERE (<condition>) AND <mark>, no RETURNING list). The database evaluates it
// beside the caller's condition, not after the rows are chosen, and any code the
// caller's condition runs runs inside the fenced statement; so the wrapper sends that
// form only when the caller's condition is plain — no subquery, no call but of
// built-in scalar functions, only built-in operator spellings and casts to built-in
// types, at most a few hundred tokens — and the two statements otherwise.
//
// The wrapper sends the one-statement form only after DeleteFenceQuery, run on the
// connection, said yes for the table; otherwise, and under ExpectVersion or with the
// caller's own RETURNING, it sends the two statements.
type DeleteFencer interface {
	// DeleteFence returns the fragments for table (as the statement names it).
	DeleteFence(table TableName, tokenCol string) (mark, check string)
	// DeleteFenceQuery returns a query yielding one row with 1 when the objects check
	// uses exist (callable by the session's role) and every trigger of the guards on
	// table accepts the one-statement DELETE; 0 or no row otherwise.
	DeleteFenceQuery(table TableName) (query string, args []any)
	// DeleteFenceExec reports whether the driver's Exec of the one statement runs it
	// whole (the check for every row) and reports the rows deleted as RowsAffected
	// (pgx: the command tag). Otherwise the wrapper runs it as a query and counts the
	// rows it returns (go-sql-driver/mysql reports no affected rows for a statement
	// that returns rows).
	DeleteFenceExec() bool
}

// UpdateTriggerFinder is implemented by a dialect whose server runs a table's BEFORE
// UPDATE row triggers for an upsert's conflicting row even when the statement's
// UPDATE branch changes nothing (MySQL/MariaDB: INSERT … ON DUPLICATE KEY UPDATE
// c = c). BeforeUpdateTriggersQuery returns a query yielding one row with 1 when the
// table has such a trigger (the guard's included), 0 or no row otherwise: the wrapper
// sends such an upsert as its "do nothing" form only when the answer is 0 — a user
// trigger that sets a column (an updated_at touch) would make the unfenced form write.
type UpdateTriggerFinder interface {
	BeforeUpdateTriggersQuery(table TableName) (query string, args []any)
}

// TxTokenRecorder is implemented by dialects whose guard lets a transaction delete a
// row it wrote earlier by other means than the wrapper's fenced DELETE of that row (on
// PostgreSQL: an ON DELETE CASCADE from a parent, a cross-partition UPDATE, run as a
// DELETE and an INSERT, a user's trigger), so that the row's tombstone records the
// token the row was stamped with — which, once a later lease raised the transaction's
// token, is below the token the transaction deletes under (red-team rt59b F2, F3).
// TxTokenStatement returns a statement with one parameter, the token (an int64), that
// makes it known to the database for the rest of the open transaction; the tombstones
// the transaction records from then on hold at least it. The wrapper sends it only
// when a statement of a transaction carries another token than an earlier one did
// (one round trip at that moment; none in a transaction of one token), and again after
// a savepoint statement, which may have reverted it.
type TxTokenRecorder interface {
	TxTokenStatement() string
}
