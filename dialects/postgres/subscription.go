package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// subscriptionsQuery counts the logical-replication subscriptions of the connection's
// database, enabled or not. pg_subscription is a shared catalog readable column by
// column: subdbid is granted to PUBLIC (only subconninfo, which may hold a password,
// is withheld), so any account may run it unless an administrator revoked that.
const subscriptionsQuery = `SELECT pg_catalog.count(*) FROM pg_catalog.pg_subscription s
WHERE s.subdbid OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())`

// ReplicationConfigured is PostgreSQL's half of the one server-role judgement that
// WritablePrimaryQuery cannot make (dialect.ReplicationLister, red-team rt50c F1–F3): a
// database with a logical-replication subscription — enabled or disabled, caught up or
// not (a blue/green major-version upgrade or a migration to a new cluster before its
// cut-over, a pglogical-style failover target) — is not in recovery, yet it receives
// rows, tombstones and possibly the floor row from another server: its rows lag the
// publisher's, a stale token's write there is judged by them, and a floor raised there
// is overwritten by the publisher's when the apply worker next writes the floor row. Any
// subscription of the current database counts, whatever it publishes (as MariaDB's
// multi-source replication does): drop it before the database takes fenced writes
// (ALTER SUBSCRIPTION … DISABLE; ALTER SUBSCRIPTION … SET (slot_name = NONE); DROP
// SUBSCRIPTION …). One query; a server that refuses it for want of a privilege
// (insufficient_privilege, 42501: SELECT on pg_subscription revoked) is reported as
// listed false, err nil; any other error is returned. Subscriptions made by an
// extension outside pg_subscription (pglogical's own catalog) are not seen.
// ReplicaAdvice implements dialect.ReplicationLister.
func (dialectImpl) ReplicaAdvice() (reset, grant string) {
	return "a subscriber takes fenced writes once its subscriptions are dropped (DROP SUBSCRIPTION)",
		"SELECT (subdbid) ON pg_catalog.pg_subscription"
}

func (dialectImpl) ReplicationConfigured(ctx context.Context, query dialect.CatalogQuery) (configured, listed bool, err error) {
	rows, err := query(ctx, subscriptionsQuery)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "42501":
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("listing the database's subscriptions (pg_subscription): %w", err)
	case len(rows) != 1 || len(rows[0]) != 1:
		return false, false, fmt.Errorf("listing the database's subscriptions (pg_subscription): %d rows, want one count", len(rows))
	}
	return rows[0][0] != "0", true, nil
}

var _ dialect.ReplicationLister = dialectImpl{}
