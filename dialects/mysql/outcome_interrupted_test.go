package mysql_test

import (
	"testing"

	fmy "github.com/fencedsql/fencedsql/dialects/mysql"
	gomysql "github.com/go-sql-driver/mysql"
)

// TestInterruptedErrorsNotServerAnswer: Classify marks every MySQL error
// packet Server (the wrapper then calls the statement or COMMIT NotCommitted), except
// 1053, 1927, 1317 and the packet errors, which "say the session or the server went
// away while the statement ran (it may have committed)". The same interruption by
// another name is not excepted: MariaDB's 1969 ER_STATEMENT_TIMEOUT ("Query execution
// was interrupted (max_statement_time exceeded)", the same kill machinery as 1317
// with KILL_TIMEOUT), MySQL 8's 3169 ER_SESSION_WAS_KILLED and 3024
// ER_QUERY_TIMEOUT (max_execution_time). And the client-range codes 2013
// CR_SERVER_LOST / 2006 CR_SERVER_GONE_ERROR, which reach the driver as error packets
// only from a proxy (ProxySQL sends 2013 when its backend connection dies mid-query,
// including mid-COMMIT): the backend may have committed. PostgreSQL's equivalent, 57014
// statement_timeout, is class 57, which isServerError deliberately leaves Unknown.
// Right behaviour: these are not the server's answer (Server false, outcome Unknown),
// as 1317 is; a wrong NotCommitted invites a retry of a write that may be durable.
func TestInterruptedErrorsNotServerAnswer(t *testing.T) {
	if fmy.Dialect.Classify(&gomysql.MySQLError{Number: 1317, Message: "Query execution was interrupted"}).Server {
		t.Fatal("case wrong: 1317 is Server")
	}
	for _, me := range []*gomysql.MySQLError{
		{Number: 1969, Message: "Query execution was interrupted (max_statement_time exceeded)"},
		{Number: 3169, Message: "Session was killed"},
		{Number: 3024, Message: "Query execution was interrupted, maximum statement execution time exceeded"},
		{Number: 2013, Message: "Lost connection to MySQL server during query"},
		{Number: 2006, Message: "MySQL server has gone away"},
	} {
		if fmy.Dialect.Classify(me).Server {
			t.Errorf("Classify(%d %q).Server = true (NotCommitted); want false like 1317: the statement was interrupted, its outcome is unknown", me.Number, me.Message)
		}
	}
}
