package schema

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// raiseSession is the raise's own session on a server that does not end a statement
// waiting for a lock when its client goes away (dialect.FloorWaitBounder:
// MySQL/MariaDB). A raise that gave up at its context's end left its write of the
// floor row queued on the server until the server's lock wait timeout, and every
// guarded write queued behind it, after the raise had reported "NOT raised" (red-team
// rt58d F1). RaiseTokenFloor bounds the session's lock waits by the context's time
// left before each write of a floor (bound), ends the session from another connection
// when the context ends during that write (end), and closes the connection instead of
// returning it to the pool (release). nil (any other dialect) does nothing: pgx
// cancels the statement on the server when the context ends.
type raiseSession struct {
	b        dialect.FloorWaitBounder
	id       int64
	identity string // the server's
	peer     string // the session's, beside its id (dialect.FloorWaitBounder)
	bounded  bool   // the session's lock waits were lowered: not for the pool's next user
}

// openRaiseSession reads conn's session id and server identity; nil when d is not a
// dialect.FloorWaitBounder.
func openRaiseSession(ctx context.Context, conn *sql.Conn, d dialect.Dialect) (*raiseSession, error) {
	b, ok := d.(dialect.FloorWaitBounder)
	if !ok {
		return nil, nil
	}
	s := &raiseSession{b: b}
	if err := conn.QueryRowContext(ctx, b.RaiseSessionIDQuery()).Scan(&s.id, &s.identity, &s.peer); err != nil {
		return nil, fmt.Errorf("fencedsql: RaiseTokenFloor: reading the raise's session id: %w", err)
	}
	return s, nil
}

// bound lowers the session's lock waits to ctx's time left, in whole seconds rounded
// up and at least 1, before a write of a floor: the server then gives up waiting at
// the latest a second after the client, whatever its own lock wait timeouts. Without
// a deadline it does nothing (a cancel is end's to handle).
func (s *raiseSession) bound(ctx context.Context, tx *sql.Tx) error {
	if s == nil {
		return nil
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	secs := int64(math.Ceil(time.Until(deadline).Seconds()))
	s.bounded = true // even a failed SET may have been applied
	if _, err := tx.ExecContext(ctx, s.b.BoundLockWaitQuery(max(secs, 1))); err != nil {
		return fmt.Errorf("fencedsql: RaiseTokenFloor: bounding the raise's lock wait by its context (nothing raised): %w", err)
	}
	return nil
}

// release closes conn, after the raise's transaction has ended: when bound lowered
// its session's lock waits, the connection is discarded instead of returned to the
// pool. It may be called more than once.
func (s *raiseSession) release(conn *sql.Conn) {
	if s != nil && s.bounded {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // discards it
	}
	_ = conn.Close()
}

// end ends the raise's session from another connection of db, once ctx has ended
// during its write of the floor (the client has closed the raise's connection; the
// server may not notice while the write waits), and waits until the server no longer
// lists it. It kills nothing on a connection that reaches another server than the
// raise's (a VIP moved meanwhile: the same session id there is another session). It
// returns nil when the session is gone, else why it may still be there. lctx bounds
// it. Nor on a server that restarted since the raise read its session id (the
// dialect's identity changes with a restart, red-team rt59a F4: connection ids start
// again from 1 there, and the raise's id was another client's session); the check and
// the KILL run on one connection, which a restart in between breaks. A session is the
// raise's only when its peer is the raise's too: an identity may survive a quick
// restart (MariaDB's start instant is in whole seconds; MySQL's identity has none).
func (s *raiseSession) end(lctx context.Context, db *sql.DB) error {
	c, err := db.Conn(lctx)
	if err != nil {
		return err
	}
	defer c.Close()
	live := func() (bool, error) {
		var identity string
		var exists int64
		if err := c.QueryRowContext(lctx, s.b.SessionLiveQuery(), s.id, s.peer).Scan(&identity, &exists); err != nil {
			return false, err
		}
		if identity != s.identity {
			return false, fmt.Errorf("the pool's next connection reaches another server, or the raise's server restarted (%s, not the raise's %s): its session ids are not the raise's", identity, s.identity)
		}
		return exists != 0, nil
	}
	alive, err := live()
	var kerr error
	if err == nil && alive {
		_, kerr = c.ExecContext(lctx, s.b.EndSessionQuery(s.id)) // it may have ended meanwhile: live says
	}
	for pause := 5 * time.Millisecond; err == nil && alive; pause = min(2*pause, 100*time.Millisecond) {
		select {
		case <-lctx.Done():
			err = lctx.Err()
		case <-time.After(pause):
			alive, err = live()
		}
	}
	if err != nil && kerr != nil {
		err = fmt.Errorf("%w (ending it: %v)", err, kerr)
	}
	return err
}
