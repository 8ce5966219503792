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

var _ dialect.TxOpenQuerier = dialectImpl{}
