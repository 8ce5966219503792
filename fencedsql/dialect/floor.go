package dialect

import "context"

// FloorTable is the token floor: one row (id = 1, floor), in the database's default
// schema (PostgreSQL: the first schema of the search_path when the guards were
// installed; MySQL: each database that holds a guarded table, next to its triggers;
// SQLite: each schema that holds a guarded table). The guards create it; only its
// owner writes it, and the fenced driver refuses statements that name it.
const FloorTable = "fencedsql_floor"

// Floorer is implemented by dialects whose guards enforce the token floor.
type Floorer interface {
	// FloorDDL returns the statements that create FloorTable with its one row (floor 0)
	// when missing, in the connection's default schema. GuardDDL includes them (for the
	// schema its guards read).
	FloorDDL() []string
	// RaiseFloorQuery returns the statement that sets the floor of table (FloorTable in
	// the schema a FloorFinder named, qualified) to floor when it is lower — never
	// lowers it — and writes its one row when missing; floor is a bind parameter.
	RaiseFloorQuery(table TableName, floor int64) (query string, args []any)
}

// FloorInstallLocker is implemented by dialects whose floor installation (FloorDDL,
// inside GuardDDL) takes a lock that a raise takes too, so that the two never overlap:
// RaiseTokenFloor runs FloorRaiseLock's statements first in its transaction, then
// lists the floors the guards read. A raise then waits for an installation in
// progress and sees the guards it committed; an installation that begins during a
// raise waits for it and starts its new floor table from the raised floors. Without
// it, a floor table installed while a raise ran started at the old floor, unseen by
// the raise (tokens going back on the tables its guards protect).
type FloorInstallLocker interface {
	FloorRaiseLock() []string
}

// FloorSettler is implemented by dialects whose guards read the floor without a lock
// that a raise waits for (PostgreSQL: a sequence's last value, lock-free): a
// transaction open across the raise may have judged a write under the old floor, and
// would commit it after the raise returned. RaiseTokenFloor, once its raise has
// committed, waits until every transaction open at that moment in the database has
// ended (as CREATE INDEX CONCURRENTLY waits out older transactions).
type FloorSettler interface {
	// OpenTransactionsQuery lists the transactions open now in the connection's
	// database, other than the session's own, that may have judged a write under the
	// floor: an identifier and the session's process id per row.
	OpenTransactionsQuery() string
	// StillOpenQuery yields those of the identifiers in its one bind parameter (joined
	// with commas) still open: the identifier and the session's process id per row.
	StillOpenQuery() string
}

// FloorCopier is implemented by dialects whose guards read a copy of the floor kept by
// a trigger on the floor table (PostgreSQL's sequence): FloorCopiedQuery yields one row,
// 1 when table's copy is at or above its floor. RaiseTokenFloor checks it after its
// writes, in its transaction, and fails when a copy was not kept (the sync trigger
// disabled: the guards' fast path would accept tokens below the raised floor);
// TokenFloors fails and schema.Check reports when a floor it reads has a copy below it
// (the sync trigger not firing for a raise applied by logical replication: red-team
// rt50a F1).
type FloorCopier interface {
	FloorCopiedQuery(table TableName) (query string, args []any)
}

// PrimaryChecker is implemented by dialects that can tell a server that takes writes as
// a primary from a replica: WritablePrimaryQuery yields one row, 1 when it does.
// RaiseTokenFloor refuses to raise anywhere else: a raise on a replica that an account
// with the right to write past read_only (MariaDB) makes is undone when the replica
// applies the primary's floor from its relay log (red-team rt24c F4).
type PrimaryChecker interface {
	WritablePrimaryQuery() string
}

// PreparedLister is implemented by dialects where a prepared two-phase transaction
// no longer holds the lock a raise waits for (MariaDB: XA PREPARE releases the shared
// lock the guards took on the floor row), so that one written under the old floor may
// commit after the raise returned. PreparedQuery lists the prepared transactions, one
// per row, the last column identifying it; RaiseTokenFloor waits for those listed at
// the raise to end (or fails with ErrFloorUnsettled when its context ends first).
type PreparedLister interface {
	PreparedQuery() string
}

// FloorLockReader is implemented by dialects whose guards read the floor with a lock
// that a raise waits for (MySQL/MariaDB: LOCK IN SHARE MODE). OutdatedFloorReadersQuery
// lists the guard triggers in the connection's scope that read the floor without that
// lock (of an earlier version, before fencedsql-schema -apply upgraded them): schema and
// trigger per row. RaiseTokenFloor raises the floor all the same and then reports them:
// a transaction they judged under the old floor may still commit.
type FloorLockReader interface {
	OutdatedFloorReadersQuery() (query string, args []any)
}

// FloorBlockLister is implemented by dialects whose raise waits for a lock every open
// guarded write holds on the floor row (MySQL/MariaDB: the guards' LOCK IN SHARE MODE),
// so that a paused holder's open transaction blocks it. When the raise's write fails
// with FloorLockWait (the server's lock wait timeout, or a deadlock whose victim was
// the raise) or its context ends,
// RaiseTokenFloor rolls back and fails with a *SettleError (Blocked, ErrFloorBlocked)
// naming the sessions FloorBlockersQuery lists (red-team rt31b F8).
type FloorBlockLister interface {
	// FloorLockWait reports whether err is the server's lock wait timeout or a
	// deadlock that rolled back the raise: it waited for the floor row and gave up.
	FloorLockWait(err error) bool
	// FloorBlockersQuery lists the sessions, other than the connection's own, whose
	// open transactions hold row locks: one session id per row.
	FloorBlockersQuery() string
}

// ReplicationLister is implemented by dialects whose server can be a replica that
// PrimaryChecker's one-query test cannot see: MySQL/MariaDB replication configured but
// stopped (STOP SLAVE, STOP ALL SLAVES: no replication thread left, read_only off), a
// PostgreSQL database with a logical-replication subscription (not in recovery, yet
// fed by another server: red-team rt50c F1–F3). Together with PrimaryChecker it is the
// one server-role judgement (red-team rt48i F1, F2) that the wrapper's per-connection
// session check, schema.RaiseTokenFloor, schema.RaiseTokenFloorReadOnly and
// schema.MaxToken all make: a server with replication configured is not a primary
// (ErrNotPrimary).
//
// ReplicationConfigured lists the server's replication connections (subscriptions)
// through query: configured reports any, running or not. listed false with err nil
// means the account may not list them (the server refused for want of a privilege):
// configured is then unknown, and the caller decides — the floor tools fail closed,
// the session check keeps PrimaryChecker's verdict (a known limitation,
// docs/design.md). err is any other failure.
//
// ReplicaAdvice gives the words of the callers' errors, in the database's terms: reset,
// how a server with replication configured becomes a primary again; grant, the
// privilege that lets an account list the replication connections.
type ReplicationLister interface {
	ReplicationConfigured(ctx context.Context, query CatalogQuery) (configured, listed bool, err error)
	ReplicaAdvice() (reset, grant string)
}

// ReplicationThreadCounter is implemented by dialects whose new primary may take the
// floor's raise while still read-only (MySQL/MariaDB: an account with READ_ONLY ADMIN
// or SUPER writes past read_only; schema.RaiseTokenFloorReadOnly). ReplicationThreadsQuery
// yields the number of replication threads running (RaiseTokenFloorReadOnly's test in
// place of PrimaryChecker's, which refuses read_only). PostgreSQL has none: a standby
// cannot take the raise at all.
type ReplicationThreadCounter interface {
	ReplicationThreadsQuery() string
}
