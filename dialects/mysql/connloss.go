package mysql

import (
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ConnectionLost implements dialect.ConnLossJudge: go-sql-driver/mysql's
// ErrInvalidConn ("invalid connection": a read or write that failed after the request
// was sent — a network cut, a server restart, KILL CONNECTION), and the error packets
// that say the session or the server went away (sessionLost). A query interrupted on a
// session that goes on (1317 KILL QUERY, a max_statement_time) is not one.
func (dialectImpl) ConnectionLost(err error) bool {
	if errors.Is(err, mysql.ErrInvalidConn) {
		return true
	}
	var me *mysql.MySQLError
	return errors.As(err, &me) && sessionLost(me.Number)
}

var _ dialect.ConnLossJudge = dialectImpl{}

// sessionLost reports the error numbers that say the session or the server went away
// while the statement ran: the server's answer to nothing (Classify: not
// ErrorInfo.Server), and a lost connection (ConnectionLost).
func sessionLost(number uint16) bool {
	switch number {
	case 1053, // Server shutdown in progress
		1927,       // MariaDB: Connection was killed
		3169,       // MySQL: Session was killed
		2006, 2013, // server gone away, lost connection (as a proxy's error packet)
		1158, 1159, 1160, 1161: // communication packets: read error, read timeout, write error, write timeout
		return true
	}
	return false
}
