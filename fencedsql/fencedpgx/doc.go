// Package fencedpgx fences writes for pgx-native code — *pgxpool.Pool, *pgx.Conn,
// pgx.Tx and sqlc's pgx/v5 output — with the same engine as fencedsql's database/sql
// wrapper: the same rewriter and plan cache, the same contexts (fencedsql.WithLease,
// WithToken, ExpectVersion), the same typed errors (ErrFenced, ErrVersionConflict,
// ErrNoToken, ErrUnsupported, ErrDuplicate), the same lazy schema and session checks,
// and the same metrics and span events. Guarded tables are configured with the same
// options (fencedsql.Guard, WithStrict, …); the dialect is PostgreSQL. Before its first
// statement a Pool or Conn does the work a database/sql pool does at its first
// connection, with the same code: the tables the database records as guarded (the
// registry, the guard's triggers) and the partitions and inheritance children of every
// guarded table are guarded too, listed or not, and a Guard naming a table that does
// not exist fails with fencedsql.ErrSchema (see New).
//
//	pool, _ := pgxpool.New(ctx, dsn)
//	db, err := fencedpgx.New(pool, fencedsql.Guard("accounts"))
//	ctx = fencedsql.WithLease(ctx, lease)
//	tx, err := db.Begin(ctx) // bound to lease.Token()
//	_, err = tx.Exec(ctx, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`, 10, 42)
//	// errors.Is(err, fencedsql.ErrFenced): a newer token already wrote the row; nothing changed
//
//	queries := sqlcdb.New(db) // sqlc's DBTX for pgx/v5: *Pool, *Conn and *Tx implement it
//
// What goes through the fence: Exec, Query and QueryRow (every query exec mode; the
// token is a typed parameter, $n::bigint, so simple_protocol works too), transactions
// (Begin, BeginTx; savepoints with Tx.Begin, closed with their parent as pgx's),
// SendBatch (every queued statement is fenced; the batch runs as one transaction, so a
// stale statement fails the whole batch with ErrFenced and nothing of it is applied; a
// refused statement means nothing is sent), Prepare (a guarded write is prepared as its
// rewrite, once, and serves every token). pgx.NamedArgs (and any pgx.QueryRewriter
// given as the first argument) is applied before the statement is fenced, so named
// arguments work. A fenced DELETE is two statements (a fencing UPDATE, then the DELETE)
// in the caller's transaction or one of its own; SELECT … FOR UPDATE on a guarded table
// in a statement that carries a token claims the rows first (fencedsql's G10).
//
// What is refused: CopyFrom into a guarded table or one of its partitions
// (ErrUnsupported: copied rows carry no token), a batch built with pgx.Batch.BeginTx
// (begin the transaction with Begin), pgx.TxOptions.BeginQuery and CommitQuery (SQL
// pgx sends verbatim in place of BEGIN and COMMIT, which the engine would never plan)
// and an IsoLevel, AccessMode or DeferrableMode other than pgx's constants (pgx pastes
// them into BEGIN),
// and everything fencedsql refuses on a pool with guarded tables — in a batch as for a
// statement sent alone (the batch calls the statement path's checks: the lease, the
// claim's refusals, the count of a two-statement claim or DELETE).
//
// What is not fenced: the wrapped pool or connection (Unwrap, Tx.Conn, Rows.Conn), as
// with fencedsql's Unwrap. Handing one out re-arms the connection's session and table
// checks, as sql.Conn.Raw does (Pool.Unwrap: every connection, at its next acquire);
// see Pool.Unwrap for what a kept raw pool must not do.
//
// How it shares the engine: the engine is package fencedsql's, reached through the
// internal package fencedsql/internal/adapter (its one hook, adapter.New, is set by
// fencedsql in init). fencedpgx gives the engine a database/sql/driver face of the pgx
// connection (native) and the engine wraps it in the same connection wrapper as a
// database/sql connection, so every statement takes the same path; pgx's results, rows
// and command tags come back unchanged.
package fencedpgx
