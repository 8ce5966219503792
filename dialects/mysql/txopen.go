package mysql

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// TxOpenQuery implements dialect.TxOpenQuerier: whether the session is still inside a
// transaction after a statement that runs dynamic SQL succeeded in one (under
// fencedsql.WithDynamicSQL: a CALL of a procedure that commits or whose handler
// swallowed a deadlock, EXECUTE IMMEDIATE 'COMMIT' or DDL, BEGIN NOT ATOMIC … COMMIT;
// END). MariaDB reads it from @@in_transaction (1 inside a transaction). MySQL has no
// such variable and skips the /*M! … */ comment, so it answers 0: on MySQL every such
// statement ends the wrapper's transaction (fail-closed), since nothing a client can
// read without extra privileges tells whether it still holds one.
func (dialectImpl) TxOpenQuery() string {
	return "SELECT /*M!100002 @@in_transaction + */ 0"
}

// MarkStatements implements dialect.TxMarker: a savepoint set before a statement that
// runs dynamic SQL inside a transaction, released after it; COMMIT and ROLLBACK (and
// the implicit commit of DDL) drop every savepoint of the transaction, so the release
// fails (1305) when the statement ended the wrapper's transaction, even when it began
// another (COMMIT; START TRANSACTION in a procedure). Outside a transaction SAVEPOINT
// followed by RELEASE SAVEPOINT succeeds only inside one: in autocommit the savepoint
// ends with its own statement.
func (dialectImpl) MarkStatements(name string) (set, release string) {
	return "SAVEPOINT " + name, "RELEASE SAVEPOINT " + name
}

var (
	_ dialect.TxOpenQuerier = dialectImpl{}
	_ dialect.TxMarker      = dialectImpl{}
)
