package dialect

// FloorWaitBounder is implemented by dialects whose server does not end a statement
// waiting for a lock when its client goes away (MySQL/MariaDB: a raise's write of the
// floor row, queued behind a paused holder's shared lock, waits on to
// innodb_lock_wait_timeout after the client closed the connection at its context's
// end — and every guarded write after it queues behind it: red-team rt58d F1).
// RaiseTokenFloor uses it so that a raise leaves nothing waiting on the server once it
// has returned:
//
//   - before each write of a floor it runs BoundLockWaitQuery on its connection with
//     the context's time left (whole seconds, at least 1), so the server gives up the
//     wait with the client at the latest a second after it, whatever the server's own
//     lock wait timeouts; the connection is then closed, not returned to the pool;
//   - when the context ends during that write, it checks from another connection of
//     the pool (SessionLiveQuery) that it reaches the same server, ends the raise's
//     session (EndSessionQuery) and waits until SessionLiveQuery no longer finds it.
//
// Session ids, peers and server identities are those RaiseSessionIDQuery reads on the
// raise's connection. None of it needs a privilege beyond the raise's own: a session
// may end and see the sessions of its own account.
//
// A session is taken for the raise's only when its id, its peer and the server's
// identity all match: after a restart of the same server, session ids start again and
// an identity may not change (a restart within its resolution), so a session id alone
// may be another client's (red-team rt59a F4).
type FloorWaitBounder interface {
	// RaiseSessionIDQuery yields one row: the connection's session id (an integer),
	// the server's identity (text equal on every connection to one running server)
	// and the session's peer (text the server shows for this session beside its id
	// and that another client's session does not share while this one's client holds
	// its connection, e.g. the client's address and port; it may be empty).
	RaiseSessionIDQuery() string
	// BoundLockWaitQuery lowers the session's lock waits (row and metadata locks) to
	// at most secs seconds (secs ≥ 1); it never raises them.
	BoundLockWaitQuery(secs int64) string
	// SessionLiveQuery yields one row: the server's identity, as RaiseSessionIDQuery
	// reads it, and 1 when the session whose id and peer are its two bind parameters,
	// in that order, still exists (0 otherwise).
	SessionLiveQuery() string
	// EndSessionQuery ends session id, its statement and its transaction.
	EndSessionQuery(id int64) string
}
