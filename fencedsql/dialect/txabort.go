package dialect

// TxAborter is implemented by a dialect whose database, inside a transaction, aborts
// the whole transaction when one of its statements fails: it refuses every later
// statement until ROLLBACK or ROLLBACK TO SAVEPOINT, and answers COMMIT with a rollback
// (PostgreSQL, 25P02). A failed statement's earlier work in the transaction can then
// never be committed without the statement, and the wrapper leaves a failed
// two-statement write to the database (a ROLLBACK TO a savepoint the caller set before
// it undoes both statements, and the transaction goes on). On a database without it
// (MySQL/MariaDB, SQLite: a failed statement undoes itself only), the wrapper marks the
// transaction so that it can only roll back when the second statement of a
// two-statement write fails after the first changed rows (fencedsql's stamp_kept.go).
type TxAborter interface {
	// AbortsTxOnError reports whether every failed statement aborts the transaction.
	AbortsTxOnError() bool
}

// PartialFailer is implemented by dialects on which a failed statement may keep the
// changes it made before it failed: SQLite, where a trigger's RAISE(FAIL) or an OR
// FAIL conflict clause stops the statement and keeps its earlier rows' changes. When
// the fencing UPDATE of a two-statement write fails that way in the caller's
// transaction, some rows may stay stamped: the wrapper marks the transaction so that
// it can only roll back, unless the failure is the fence's own refusal (ErrFenced and
// the like), which aborts the statement whole.
type PartialFailer interface {
	// FailedStatementMayKeepChanges reports whether a failed statement may have kept
	// some of its changes.
	FailedStatementMayKeepChanges() bool
}
