package fencedsql

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// verifyRole is the second half of the session check's server-role judgement
// (red-team rt48i F1), the one the floor tools make too (schema.RaiseTokenFloor,
// MaxToken; dialect.ReplicationLister): the session query's verdict (the dialect's
// writable-primary test: read_only off, no replication running) cannot see a
// MySQL/MariaDB replica whose replication is configured but stopped (STOP SLAVE, STOP
// ALL SLAVES: a failover candidate not yet promoted, a replica paused for maintenance),
// whose rows, tombstones and floor lag the primary's: a stale token's write there would
// be acknowledged and never reach the primary. After the session query accepted the
// connection, the dialect lists the server's replication connections, once per
// connection (one more round trip when a connection first writes, never per
// statement: no SELECT can read them, docs/design.md); any one refuses guarded writes
// with a *SessionError (NotPrimary, errors.Is ErrNotPrimary). On PostgreSQL the listing
// is the database's logical-replication subscriptions (red-team rt50c F3: a subscriber
// is not in recovery, and its rows lag the publisher's); it runs after the tracked
// session check too (pgx, which sends no session query), once per connection.
//
// An account that may not list them (MariaDB without SLAVE MONITOR or SUPER, MySQL
// without REPLICATION CLIENT — the least-privilege application account, README;
// PostgreSQL where SELECT on pg_subscription was revoked from PUBLIC, whose failed
// listing also aborts the transaction, so that write fails) keeps
// the session query's verdict: such a stopped replica is then taken for a primary, a
// known open limitation (docs/design.md "Known open findings"); grant the privilege to
// close it. A failed listing fails the write as a failed session query does.
func (c *conn) verifyRole(ctx context.Context) error {
	l, ok := c.core.dialect.(dialect.ReplicationLister)
	if !ok || c.roleOK {
		return nil
	}
	configured, listed, err := l.ReplicationConfigured(ctx, c.catalog())
	reset, grant := l.ReplicaAdvice()
	switch {
	case err != nil:
		return checkQueryErr(ctx, c.core.dialect, "", "the session check's listing of the server's replication connections failed", err)
	case configured:
		return &SessionError{Dialect: c.core.dialect.Name(), Setting: "replication", Value: "configured", NotPrimary: true,
			Problem: "the server has replication configured (a replica, even with its replication stopped): its floor and rows lag behind the primary's, a write there never reaches it, and a stale token's write would be acknowledged",
			Fix:     "connect to the primary; " + reset}
	}
	if !listed {
		c.core.cfg.logger.DebugContext(ctx, "fencedsql: the account may not list the server's replication connections: a replica whose replication is stopped is not seen (grant "+grant+")")
	}
	c.roleOK = true
	return nil
}
