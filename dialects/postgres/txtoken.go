package postgres

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// txTokenSetting is the transaction-local setting that carries the largest token a
// transaction's statements carried, once they carried two (dialect.TxTokenRecorder:
// a lease joined and raised the transaction's token). The tombstone function (v12)
// records every deletion and every key a row left at no less than it: a row the
// transaction fenced under its earlier token and deleted later by an ON DELETE
// CASCADE from a parent, by a cross-partition UPDATE (run as a DELETE from one
// partition and an INSERT into another: the rekey trigger does not fire) or by a
// user's trigger — deletions the row guard admits as "written by this transaction
// first" — was recorded at the row's stamp, below the raised token, and a holder of a
// token in between re-created the key (red-team rt59b F2, F3). Like the one-statement
// DELETE's mark it is a protocol, not a secret: a client outside the wrapper that sets
// it can only raise what is recorded (a refusal, never a write); through the wrapper
// no statement sets it (the reserved prefix).
const txTokenSetting = "fencedsql_guard.tx_token"

// TxTokenStatement implements dialect.TxTokenRecorder.
func (dialectImpl) TxTokenStatement() string {
	return "SELECT pg_catalog.set_config('" + txTokenSetting + "', $1::pg_catalog.int8::pg_catalog.text, true)"
}

var _ dialect.TxTokenRecorder = dialectImpl{}
