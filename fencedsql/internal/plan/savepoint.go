package plan

// Savepoints sent as SQL text (SAVEPOINT, RELEASE [SAVEPOINT], ROLLBACK [WORK |
// TRANSACTION] TO [SAVEPOINT]) on a pool with guarded tables pass only inside a
// transaction the wrapper began (db.BeginTx; ORMs' nested transactions — GORM's
// SavePoint, bun's and pgx's nested Begin — send them there): within it they nest, a
// ROLLBACK TO undoes fenced writes (nothing unfenced is kept) and the commit is still
// the wrapper's, with its lease check. Outside one they are transaction control as
// text: SQLite's SAVEPOINT in autocommit opens a transaction the wrapper does not know
// of (its own two-statement DELETE then fails, ROLLBACK TO silently undoes fenced
// writes, RELEASE commits them without the lease check, and the connection returns to
// the pool with the transaction open); PostgreSQL and MySQL refuse them or make them
// no-ops. The planner cannot know the connection's state, so it marks the plan
// (Plan.TxOnly) and the wrapper refuses it on a connection without a transaction.

// txOnly returns pl marked with the savepoint refusal when the statement (or one of
// its statements, or a reading of its executable comments) is a savepoint statement;
// pl unchanged otherwise. Shared plans are copied, never changed.
func (p *parser) txOnly(pl *Plan) *Plan {
	if !p.savepoint || pl == nil {
		return pl
	}
	cp := *pl
	cp.TxOnly = unsupported(p.firstGuard(), "a savepoint as SQL text (SAVEPOINT, RELEASE, ROLLBACK TO) outside a transaction on a pool with guarded tables: it would open or end a transaction the wrapper does not know of; send it inside db.BeginTx … tx.Commit")
	return &cp
}
