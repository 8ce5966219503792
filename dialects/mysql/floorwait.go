package mysql

import (
	"strconv"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The raise's wait for the floor row (dialect.FloorWaitBounder, red-team rt58d F1).
// MySQL and MariaDB do not notice, while a statement waits for an InnoDB row lock or a
// metadata lock, that its client has closed the connection: a raise that gave up at
// its context's end left its write of the floor row queued to innodb_lock_wait_timeout
// (50 s by default), and every guarded write's shared lock on that row queued behind
// it, the current holder's included. RaiseTokenFloor bounds its session's waits by
// the context's time left, and on the context's end ends its session from another
// connection (KILL of a session of one's own account needs no privilege; the
// process list shows one's own sessions without PROCESS).

// RaiseSessionIDQuery yields the connection's id and the server's identity.
func (dialectImpl) RaiseSessionIDQuery() string {
	return "SELECT CONNECTION_ID(), " + serverIdentity
}

// BoundLockWaitQuery lowers the session's innodb_lock_wait_timeout (row locks) and
// lock_wait_timeout (metadata locks) to secs seconds, keeping a lower value.
func (dialectImpl) BoundLockWaitQuery(secs int64) string {
	n := strconv.FormatInt(max(secs, 1), 10)
	return "SET SESSION innodb_lock_wait_timeout = LEAST(@@SESSION.innodb_lock_wait_timeout, " + n + "), lock_wait_timeout = LEAST(@@SESSION.lock_wait_timeout, " + n + ")"
}

// SessionLiveQuery yields the server's identity and whether connection ? exists.
func (dialectImpl) SessionLiveQuery() string {
	return "SELECT " + serverIdentity + ", EXISTS (SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = ?)"
}

// EndSessionQuery ends connection id (KILL CONNECTION: its statement, then the
// session, rolling its transaction back).
func (dialectImpl) EndSessionQuery(id int64) string {
	return "KILL CONNECTION " + strconv.FormatInt(id, 10)
}

var _ dialect.FloorWaitBounder = dialectImpl{}
