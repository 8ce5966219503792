package schema

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// requirePrimary is the floor tools' one server-role judgement (red-team rt24c F4,
// rt40c F3, rt41b F4, rt48i F2, rt50c F1–F3), the same the fenced pool's session check
// makes: it fails with ErrNotPrimary when the server q reaches is not a primary, and
// why says what that would do. q must be the connection or transaction the caller then
// reads or writes through (red-team rt50c F4: a pool may hand out a connection to
// another server, a VIP moved at a failover). Two halves, both the dialect's:
//
//   - dialect.PrimaryChecker's query (MySQL/MariaDB: read_only off, no replication
//     running; PostgreSQL: not in recovery, default_transaction_read_only off); with
//     readOnlyOK (RaiseTokenFloorReadOnly) only dialect.ReplicationThreadCounter's
//     thread count, so that a still read-only new primary passes;
//   - dialect.ReplicationLister's listing: replication configured, running or stopped
//     (MariaDB STOP SLAVE / STOP ALL SLAVES, a candidate not yet promoted, a
//     multi-source primary, a promotion without RESET SLAVE ALL; a PostgreSQL database
//     with a logical-replication subscription, enabled or not), is a replica. An
//     account that may not list the connections fails closed with
//     ErrServerRoleUnknown: the tools run as an operator's account, which can be given
//     the privilege (MariaDB SLAVE MONITOR, MySQL REPLICATION CLIENT, PostgreSQL SELECT
//     (subdbid) ON pg_subscription, granted to PUBLIC by default).
//
// A dialect with neither (SQLite) passes; readOnlyOK on a dialect without a
// ReplicationThreadCounter (PostgreSQL: a standby cannot take the raise) is a
// *ConfigError.
func requirePrimary(ctx context.Context, q querier, d dialect.Dialect, op, why string, readOnlyOK bool) error {
	l, lists := d.(dialect.ReplicationLister)
	tc, counts := d.(dialect.ReplicationThreadCounter)
	switch p, checks := d.(dialect.PrimaryChecker); {
	case readOnlyOK && !counts:
		return configErr("%sReadOnly: %s has no read-only primary: use %s", op, d.Name(), op)
	case readOnlyOK:
		var threads int
		if err := q.QueryRowContext(ctx, tc.ReplicationThreadsQuery()).Scan(&threads); err != nil {
			return fmt.Errorf("fencedsql: %s: looking for replication threads: %w", op, err)
		}
		if threads > 0 {
			return fmt.Errorf("fencedsql: %s: the server runs replication threads: %s: %w", op, why, ErrNotPrimary)
		}
	case checks:
		var primary sql.NullString
		if err := q.QueryRowContext(ctx, p.WritablePrimaryQuery()).Scan(&primary); err != nil {
			return fmt.Errorf("fencedsql: %s: asking whether the server is a writable primary: %w", op, err)
		}
		if !dialect.CatalogBool(primary.String) {
			return fmt.Errorf("fencedsql: %s: the server is a replica or read-only: %s: %w", op, why, ErrNotPrimary)
		}
	}
	if !lists {
		return nil
	}
	configured, listed, err := l.ReplicationConfigured(ctx, catalogQuery(q))
	reset, grant := l.ReplicaAdvice()
	switch {
	case err != nil:
		return fmt.Errorf("fencedsql: %s: listing the server's replication connections: %w", op, err)
	case !listed && roleUnknownAllowed(ctx):
		return nil
	case !listed:
		return fmt.Errorf("fencedsql: %s: the account may not list the server's replication connections, so a replica whose replication is stopped cannot be told from a primary: nothing done; "+
			"grant it %s: %w", op, grant, ErrServerRoleUnknown)
	case configured:
		return fmt.Errorf("fencedsql: %s: the server has replication configured (a replica, even with its replication stopped, lags behind the primary and has a raise undone when replication starts again; "+
			"%s): %s: %w", op, reset, why, ErrNotPrimary)
	}
	return nil
}

type roleUnknownKey struct{}

// WithServerRoleUnknownAllowed returns ctx under which MaxToken, RaiseTokenFloor and
// RaiseTokenFloorReadOnly accept a MySQL/MariaDB server whose replication connections
// the account may not list (no SLAVE MONITOR / REPLICATION CLIENT), on the
// writable-primary test alone, instead of failing with ErrServerRoleUnknown: a replica
// whose replication is stopped then passes (red-team rt48i). The fenced pool's token
// regression check uses it for MaxToken through the least-privilege application
// account, whose answer only explains a write already refused; an operator's tool
// must not.
func WithServerRoleUnknownAllowed(ctx context.Context) context.Context {
	return context.WithValue(ctx, roleUnknownKey{}, true)
}

func roleUnknownAllowed(ctx context.Context) bool {
	v, _ := ctx.Value(roleUnknownKey{}).(bool)
	return v
}
