// Package sqllock is a lockclient backend that keeps leases in a table of a PostgreSQL
// or MySQL/MariaDB database, judged by the database server's clock.
//
//	db, _ := sql.Open("pgx", "postgres://app@db/shop")          // or "mysql"
//	_ = sqllock.CreateTable(ctx, db, sqllock.Postgres, "")      // once, at deploy time
//	backend, err := sqllock.New(db)                             // dialect from db.Driver()
//	locks := lockclient.New(backend, lockclient.WithTTL(10*time.Second))
//
// # The lease table
//
// One row per held (or expired and not yet retaken) lock: the key, the owner's name,
// the session id of the client that holds it, the fencing token of the grant and
// expires_at, computed by the database server. [DDL] returns the statements and
// [CreateTable] runs them; the default table name is [DefaultTable]. Next to the table
// live the token source, one per table, shared by all keys: a SEQUENCE on PostgreSQL
// (CACHE 1, so that every session draws from the same counter), a one-row counter table
// and a stored procedure that grants on MySQL/MariaDB.
//
// # Expiry is the server's
//
// The client never sends a time, only the TTL as a duration: a grant or renewal sets
// expires_at = (server now) + TTL, and a lease is expired once expires_at <= server now
// (PostgreSQL clock_timestamp(), MySQL UTC_TIMESTAMP(6), which does not depend on the
// session's time_zone). Because the server computes expires_at after it received the
// request, it is never earlier than the client's send time + TTL, which is what
// lockclient's local deadline (send time + TTL − margin) relies on: the client gives up
// before the service expires the lease (G7 in docs/design.md).
// Every statement is evaluated on arrival: a renewal or release that a network stall
// delivers late is judged by the state at that moment and cannot revive or free a lease
// that expired or was granted again in between.
//
// # Operations, each one round trip and one atomic step at the server
//
//   - Grant (TryAcquire): insert the row if absent, or take it over if expires_at <= now,
//     with a new token; otherwise the key is held ([lockclient.ErrHeld], also for the
//     holder's own session: locks are not re-entrant). PostgreSQL runs one
//     INSERT … ON CONFLICT DO UPDATE … WHERE expires_at <= clock_timestamp(); MySQL calls
//     the stored procedure, which runs a short transaction at the server: lock the counter
//     row (SELECT … FOR UPDATE), lock and test the key's row, increment the counter and
//     upsert the row, commit. No transaction is ever left open across a network round
//     trip, so a client that stalls mid-request (GC pause, partition) can never keep
//     row locks of the lease table.
//   - Renew: UPDATE … SET expires_at = now + TTL WHERE key, session, token match and
//     expires_at > now; no row → [lockclient.ErrLeaseLost].
//   - Release: DELETE … WHERE key, session and token match. A live row deleted: released.
//     Our own row deleted after it had expired (nobody retook it): [lockclient.ErrLeaseLost].
//     No row of ours: [lockclient.ErrNotOwner], and the current holder's row, which has
//     another session and token, is untouched: release is owner- and token-checked (G8 in
//     docs/design.md).
//   - Any database error, timeout or ended context: an error wrapping
//     [lockclient.ErrUnavailable], never ErrHeld.
//
// # Tokens
//
// Tokens are strictly increasing across all keys of one table, in the order in which
// grants take effect (commit): a grant that starts after another one completed gets a
// larger token, two grants of the same key are ordered like their tokens, and so are two
// grants of different keys. On PostgreSQL the grant statement first takes one
// transaction-scoped advisory lock for the whole table, so that drawing the sequence
// value, inserting (or taking over) the row — waiting for the key's row lock if a
// renewal or release holds it — and committing happen in one critical section shared by
// all grants: no grant draws its token before an earlier one has committed. On MySQL the
// counter row lock serialises all grants the same way. The cost is that grant attempts
// of one table run one at a time at the server (each is one short statement).
// Tokens are increasing, not consecutive: on PostgreSQL an attempt that finds the key
// held still draws (and skips) a sequence value.
// Tokens survive a crash of the server as long as commits are durable (PostgreSQL fsync
// and synchronous_commit on, InnoDB innodb_flush_log_at_trx_commit=1): run the lease
// table on a durable configuration, like the data it protects.
//
// # Abandoned attempts
//
// Every grant request stores its own session_id (the session's id and a request id), and
// Renew and Release match it. When a grant request fails with an unknown outcome
// (timeout, cut connection, ended context), it may still reach the server later and take
// the key for nobody; the session then deletes that request's row in the background,
// repeating the owner-checked DELETE with backoff (20ms doubling to 1s) for up to two
// TTLs, until it removes it. A request delivered even later leaves a grant that expires
// after its TTL. Close waits for these clean-ups within its context.
//
// # Waiting
//
// On PostgreSQL (driver github.com/jackc/pgx/v5/stdlib), a release sends
// pg_notify(channel, key) in the same statement, and Wait listens on one connection
// per Backend (LISTEN, held while someone waits and a little longer), re-checking the
// key when notified. An expiry sends no notification, so every Wait is also bounded by
// the holder's remaining lease as the server computes it (expires_at −
// clock_timestamp()) plus a small jitter, and by a cap of a few poll intervals in case
// the listening connection silently stalls. MySQL, other PostgreSQL drivers and
// [WithPolling] poll with a jittered interval (default 20–200ms), never sleeping past
// the holder's remaining lease. Nothing busy-loops.
//
// # Fairness: none promised
//
// sqllock does not queue waiters (its sessions do not implement
// [lockclient.QueueSession]): it serves waiters in no particular order, and a waiter can
// be overtaken any number of times. On PostgreSQL a release notifies every listening
// Backend and each wakes all its waiters of the key, which race with one grant
// statement each (O(waiters) statements per handoff); on MySQL the first waiter to poll
// after a release wins. What it does promise: mutual exclusion, tokens in grant order,
// no busy loop, and that every waiter re-checks within its poll bound. The conformance
// suite measured, for 16 clients taking one key in turns (hold 1ms), a median wait under
// 15ms but a longest wait of 0.3–0.5s, 27–1100× the median; a FIFO queue (a waiter
// table, notify-next on PostgreSQL) is not built yet. Where order matters, use a
// backend that queues (memlock, redislock).
//
// # A single point
//
// The lease table is one point of failure: while that database is unreachable no lock
// is granted or renewed (the errors wrap [lockclient.ErrUnavailable]) and held leases
// are declared lost when their local deadline passes. The table can live in the same
// database as the guarded data (then the lock service and the data fail together) or
// in another one. Use the primary: a lagging or failed-over replica does not have the
// latest grants.
//
// # Connections
//
// The backend uses the *sql.DB it is given as is: connections must be in autocommit mode
// (database/sql's default; do not put autocommit=0 in a MySQL DSN), and on MySQL the
// session variable timestamp must not be set (it changes what the server reports as
// now). Every call is bounded by its context and the driver's own timeouts only: give
// Release a deadline too (context.WithoutCancel keeps none). On PostgreSQL, Wait holds
// one extra pooled connection per Backend while someone waits (not with a pool of one
// connection, SetMaxOpenConns(1), where it polls).
package sqllock
