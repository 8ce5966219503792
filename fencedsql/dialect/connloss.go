package dialect

// ConnLossJudge is implemented by a dialect whose driver reports a lost connection, or
// a session the server ended, with errors of its own: go-sql-driver/mysql's
// ErrInvalidConn (a read that failed after the request was written), pgx's FATAL
// server errors (57P01 admin_shutdown of a fast shutdown, a restart or
// pg_terminate_backend) and its closed connection. The wrapper already counts the
// errors every driver shares (driver.ErrBadConn, io.EOF, a net.Error, ECONNRESET …);
// it adds the dialect's to them wherever it asks whether a connection was lost: a
// check query that failed so is cut (*fencedsql.CheckCutError), not a schema problem,
// and a COMMIT that failed so has an Unknown outcome.
type ConnLossJudge interface {
	// ConnectionLost reports whether err says the connection was lost or the server
	// ended the session while a request was in flight. An error the server answered
	// on a session that goes on (a constraint, a deadlock, a lock or busy timeout, a
	// cancelled statement) is not one: false.
	ConnectionLost(err error) bool
}
