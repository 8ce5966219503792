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
	// recorder of this version is installed (table carries the schema it resolves
	// to), 0 or no row otherwise.
	AbsenceRecorderQuery(table TableName) (query string, args []any)
	// AbsenceRecordSQL returns the statement that records the absence of a key of
	// table (carrying its schema) with keyColumns columns: its arguments are the key's
	// values in key order, then the token.
	AbsenceRecordSQL(table TableName, keyColumns int) string
}
