package dialect

// AbsenceRecorder is implemented by a dialect whose tombstone guard can record a claim
// of an absent key (docs/design.md G10, red-team rt42e F1): a token-bound SELECT … FOR
// UPDATE that pins the table's whole primary key by equality and finds no row records
// the key in the table's tombstone table with the claimer's token (kept the greater of
// it and a tombstone already there), so that the tombstone guard refuses an INSERT or
// upsert of that key under an older token while the claimer (equal tokens pass) and
// newer holders create it. The record is written by a routine the tombstone guard's
// install creates, with its owner's rights: the application may not write the
// tombstone table. Recording a key that exists is harmless (its INSERT collides on the
// key anyway, and a later DELETE records at least the row's token, which is at least
// the claimer's once it stamped the row), so the record may be written whenever the
// wrapper cannot tell that the claim found a row.
type AbsenceRecorder interface {
	// AbsenceRecorderQuery returns a query yielding one row with 1 when table's
	// claims are recorded by a recorder of this version (table carries the schema it
	// resolves to), 0 or no row when there is nothing to record (no tombstone guard on
	// table). A row may name, in its second and third columns (schema, name), the
	// table whose recorder records table's claims (PostgreSQL: a partition's are its
	// root's, whose tombstone guard its cloned triggers run; red-team rt45b F7); empty
	// or absent: table's own. Any other first value means table's tombstone guard is
	// there but no recorder can record its claims (a partition whose root's recorder
	// is missing, one of an older version): the wrapper refuses the claim
	// (ErrUnsupported) rather than record nothing.
	AbsenceRecorderQuery(table TableName) (query string, args []any)
	// AbsenceRecordSQL returns the statement that records the absence of a key of
	// table (carrying its schema) with keyColumns columns: its arguments are the key's
	// values in key order, then the token.
	AbsenceRecordSQL(table TableName, keyColumns int) string
	// KeyProbeLock returns the locking clause (with a leading space) the wrapper
	// appends to its read of whether a row of a claimed key exists (SELECT 1 FROM
	// table WHERE key = …: a claim with conjuncts besides the key's that stamped no
	// row, red-team rt46b F4); nowait: the claim asked not to wait for locks. The read
	// must answer for the key's latest committed row, never for an older snapshot of
	// the transaction (REPEATABLE READ, SERIALIZABLE), where a row deleted since is
	// still there although the claim's own locking read found it gone (red-team rt47b
	// F3): a locking read reads the latest row (MySQL/MariaDB), or fails with a
	// serialization failure where the snapshot's row changed since (PostgreSQL), and
	// holds the key's row until the transaction ends.
	KeyProbeLock(nowait bool) string
}

// AbsenceCaller is implemented by an AbsenceRecorder whose recorder the wrapper calls
// with typed arguments (red-team rt44a): the call cannot be taken by an overload of
// the recorder (F2), a value the key's type cannot hold records nothing instead of
// failing the transaction (F3), and a NOWAIT claim's record does not wait (F7).
type AbsenceCaller interface {
	// AbsenceCall returns the statement and its arguments that record the absence of
	// the key vals of table (carrying its schema), in key order — a claim's literal as
	// its text, a bound value as given — claimed at token. key are the table's primary
	// key columns (names and types as Tombstoner.PrimaryKeyQuery reports them). nowait:
	// the claim asked not to wait for locks (FOR UPDATE NOWAIT), and the record fails
	// as the claim's read would rather than wait for a concurrent writer of the key. ok
	// false: record nothing, no row of the key can exist (a value outside the type).
	AbsenceCall(table TableName, key []KeyColumn, vals []any, token int64, nowait bool) (query string, args []any, ok bool)
}

// AbsenceUnsupportedMark starts the message of the error a recorder raises when it
// cannot record the claim where the rows it covers are checked (PostgreSQL: a table
// with inheritance children, red-team rt44a F4): a dialect-independent mark the
// wrapper reports as ErrUnsupported.
const AbsenceUnsupportedMark = "fencedsql_absent_unsupported"
