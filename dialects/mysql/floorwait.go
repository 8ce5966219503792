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

// RaiseSessionIDQuery yields the connection's id, the running server's identity
// (raiseServerIdentity) and the session's peer (sessionPeer).
func (dialectImpl) RaiseSessionIDQuery() string {
	return "SELECT CONNECTION_ID(), " + raiseServerIdentity +
		", COALESCE((SELECT " + sessionPeer + " FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()), '')"
}

// sessionPeer is what the process list shows of a session beside its id, compared
// byte for byte: its HOST — for a TCP connection the client's address and port
// ("127.0.0.1:40184") — and, on MariaDB, its TID, the operating system's id of the
// thread serving it (a thread of the running process: a restarted server's threads
// have new ids). After a restart connection ids start again from 1, and the identity
// may not change (a restart within its whole second: CI saw one), so the backstop
// could take the session that got the raise's old id for the raise's and KILL it
// (red-team rt59a F4); a client that also got the raise's old client port took the
// HOST too (red-team rt60c F4: the raise's socket dies with the server, so its port is
// free again). Under a thread pool (thread_handling=pool-of-threads) the TID is the
// thread running the session's statement at the time, so the raise's own session may
// not be found: nothing is killed, and the raise's wait ends a second after its
// deadline (BoundLockWaitQuery) or, after a cancel without one, at the server's lock
// wait timeout — availability, never another client's session (Known open findings).
// MySQL 8 shows no TID there: HOST only (Known open findings).
const sessionPeer = "CAST(CONCAT_WS('/', HOST /*M!100000 , TID */) AS BINARY)"

// raiseServerIdentity is the identity of the running server the raise's session
// check compares (RaiseSessionIDQuery, SessionLiveQuery): the server's identity
// (serverIdentity: server_id, host name, port) and, on MariaDB, the instant the server
// started, in seconds since the epoch — which changes with a restart, while the rest
// does not and connection ids start again from 1 (red-team rt59a F4: a raise that gave
// up while its server restarted found "the same server" and its old id in the process
// list, now another client's session, and KILLed it). The instant is
// FLOOR(UNIX_TIMESTAMP()) − the Uptime status, both taken from the statement's start
// (MariaDB computes Uptime from it), so it is the same on every read, whatever
// timestamp the session set (the subtraction is done on signed integers: a timestamp
// set before the start makes Uptime wrap). MySQL 8 has no
// information_schema.GLOBAL_STATUS: the part is in a MariaDB-only executable comment,
// and MySQL's identity has no start instant (Known open findings). It is not the
// identity the pool's path check reads (NamePathQuery): a restart is the same server
// for that.
const raiseServerIdentity = "CAST(CONCAT_WS(':', @@GLOBAL.server_id, @@GLOBAL.hostname, @@GLOBAL.port" +
	" /*M!100000 , FLOOR(UNIX_TIMESTAMP()) - CAST((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME') AS SIGNED) */) AS BINARY)"

// BoundLockWaitQuery lowers the session's innodb_lock_wait_timeout (row locks) and
// lock_wait_timeout (metadata locks) to secs seconds, keeping a lower value.
func (dialectImpl) BoundLockWaitQuery(secs int64) string {
	n := strconv.FormatInt(max(secs, 1), 10)
	return "SET SESSION innodb_lock_wait_timeout = LEAST(@@SESSION.innodb_lock_wait_timeout, " + n + "), lock_wait_timeout = LEAST(@@SESSION.lock_wait_timeout, " + n + ")"
}

// SessionLiveQuery yields the running server's identity (raiseServerIdentity) and
// whether connection ? exists with peer ? (sessionPeer). The KILL that follows (EndSessionQuery) runs on the same
// connection: a restart in between breaks it, and on a running server connection ids
// are not reused.
func (dialectImpl) SessionLiveQuery() string {
	return "SELECT " + raiseServerIdentity + ", EXISTS (SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = ? AND " + sessionPeer + " = CAST(? AS BINARY))"
}

// EndSessionQuery ends connection id (KILL CONNECTION: its statement, then the
// session, rolling its transaction back).
func (dialectImpl) EndSessionQuery(id int64) string {
	return "KILL CONNECTION " + strconv.FormatInt(id, 10)
}

var _ dialect.FloorWaitBounder = dialectImpl{}
