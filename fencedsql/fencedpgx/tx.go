package fencedpgx

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Tx is a fenced pgx transaction (pgx.Tx). One begun with a context from
// fencedsql.WithLease or WithToken is bound to that token — its guarded writes carry it
// whatever their own context says — and Commit refuses, rolling back, once the lease is
// lost (the error wraps lockclient.ErrLeaseLost). Begin makes a savepoint, as pgx's.
//
// Like pgx's, a Tx is closed once it ended, and a savepoint also once its parent (or
// any ancestor) ended: every call then returns pgx.ErrTxClosed and sends nothing. On a
// pool the connection went back to the pool with the parent, and a savepoint's
// statement would otherwise run in whatever the connection does next — another
// holder's transaction, with that holder's token.
type Tx struct {
	l       *link
	dtx     driver.Tx // fencedsql's transaction; nil for a savepoint
	ntx     *nativeTx // nil for a savepoint
	tx      pgx.Tx    // the pgx transaction (or savepoint)
	stmts   *stmtMap
	release func() // returns a pool's connection
	parent  *Tx    // the transaction a savepoint was begun in; nil for a transaction
	closed  bool   // this Tx ended (see done for its ancestors)
}

func begin(ctx context.Context, l *link, opts pgx.TxOptions, stmts *stmtMap) (*Tx, error) {
	if err := checkTxOptions(opts); err != nil {
		return nil, err
	}
	if l.n.tx != nil {
		// pgx would send BEGIN inside the open transaction (the server only warns), and
		// the new Tx's token would then bind the statements of the one already open.
		return nil, fmt.Errorf("%w: a transaction is already open on this connection: commit or roll it back first, or use its Begin for a savepoint", fencedsql.ErrUnsupported)
	}
	// The options are the connection's only for this call: native.BeginTx takes them
	// when the engine sends BEGIN, and a Begin the engine refuses before that (a lost
	// lease, a failing first use) must not leave them for the next transaction begun on
	// this (pooled) connection by anyone.
	l.n.txOpts = opts
	defer func() { l.n.txOpts = pgx.TxOptions{} }()
	l.n.lastTx = nil
	dtx, err := l.c.Begin(ctx)
	if err != nil {
		return nil, err
	}
	nt := l.n.lastTx
	return &Tx{l: l, dtx: dtx, ntx: nt, tx: nt.tx, stmts: stmts}, nil
}

// checkTxOptions refuses the options pgx would send as SQL of the caller's own:
// pgx.TxOptions.BeginQuery replaces BEGIN and CommitQuery replaces COMMIT, sent
// verbatim (several statements allowed), so the wrapper would never plan them: an
// unfenced write to a guarded table, or a setting the wrapper refuses as a statement
// (synchronous_commit), would go through. IsoLevel, AccessMode and DeferrableMode are
// plain strings too, pasted by pgx into the BEGIN text (simple protocol, several
// statements allowed): only the values pgx defines as constants (or "") are accepted,
// compared exactly; anything else — "read committed; UPDATE …" — is refused before
// anything is sent (red-team rt28a F7).
func checkTxOptions(opts pgx.TxOptions) error {
	var field string
	switch {
	case opts.BeginQuery != "":
		field = "BeginQuery"
	case opts.CommitQuery != "":
		field = "CommitQuery"
	}
	if field != "" {
		return &fencedsql.UnsupportedError{Reason: "pgx.TxOptions." + field + ": pgx sends it verbatim in place of BEGIN or COMMIT, unplanned, so it could write a guarded table unfenced or change a setting the wrapper refuses: use IsoLevel, AccessMode and DeferrableMode, and send further statements (SET LOCAL …) on the transaction, where they are checked"}
	}
	// Each mode is one of pgx's constants, in any ASCII case (SQL keywords: a
	// "SERIALIZABLE" spelled so worked before the check, red-team rt30a F7), or "".
	for _, m := range []struct {
		field, v string
		ok       []string
	}{
		{"IsoLevel", string(opts.IsoLevel), []string{string(pgx.Serializable), string(pgx.RepeatableRead), string(pgx.ReadCommitted), string(pgx.ReadUncommitted)}},
		{"AccessMode", string(opts.AccessMode), []string{string(pgx.ReadWrite), string(pgx.ReadOnly)}},
		{"DeferrableMode", string(opts.DeferrableMode), []string{string(pgx.Deferrable), string(pgx.NotDeferrable)}},
	} {
		if m.v != "" && !slices.ContainsFunc(m.ok, func(c string) bool { return dialect.EqualFoldASCII(c, m.v) }) {
			return txModeRefused(m.field, m.v)
		}
	}
	return nil
}

func txModeRefused(field, v string) error {
	return &fencedsql.UnsupportedError{Reason: fmt.Sprintf("pgx.TxOptions.%s %q is not one of the values pgx defines (its constants, or \"\"): pgx pastes it into the BEGIN text, unplanned, so any other text could carry a statement the wrapper never sees", field, v)}
}

// done reports whether t or any of its ancestors ended: a savepoint outlives neither
// itself nor the transaction it was begun in (pgx's nested transaction delegates to
// its parent, which returns pgx.ErrTxClosed once ended).
func (t *Tx) done() bool {
	for x := t; x != nil; x = x.parent {
		if x.closed {
			return true
		}
	}
	return false
}

func (t *Tx) end() {
	t.closed = true
	if t.release != nil {
		r := t.release
		t.release = nil
		r()
	}
}

// Begin starts a pseudo nested transaction (a savepoint), bound to the same token.
// The binding of ctx is judged as a statement's is: leases it carries (a lock taken
// inside the transaction) join the transaction's — checked by every later statement
// and the Commit, the larger token carried — and a lost one refuses the savepoint with
// an error wrapping lockclient.ErrLeaseLost (the transaction then only rolls back); a
// bare token other than the transaction's is refused with fencedsql.ErrUnsupported.
// Nothing is sent when refused.
func (t *Tx) Begin(ctx context.Context) (pgx.Tx, error) {
	if t.done() {
		return nil, pgx.ErrTxClosed
	}
	if err := t.l.c.Savepoint(ctx); err != nil {
		return nil, err
	}
	sp, err := t.tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &Tx{l: t.l, tx: sp, stmts: t.stmts, parent: t}, nil
}

// Commit commits the transaction (releases the savepoint). A transaction whose lease
// was lost is rolled back instead, and Commit returns an error wrapping
// lockclient.ErrLeaseLost.
func (t *Tx) Commit(ctx context.Context) error {
	if t.done() {
		return pgx.ErrTxClosed
	}
	if t.dtx == nil {
		err := t.tx.Commit(ctx)
		t.closed = true
		return err
	}
	defer t.end()
	t.ntx.ctx = ctx
	return t.dtx.Commit()
}

// Rollback rolls the transaction back. After Commit or Rollback it returns
// pgx.ErrTxClosed, as pgx's does, so that it can be deferred.
func (t *Tx) Rollback(ctx context.Context) error {
	if t.done() {
		return pgx.ErrTxClosed
	}
	if t.dtx == nil {
		// pgx sends ROLLBACK TO SAVEPOINT itself, unplanned: the server reverts what a
		// SET inside the savepoint changed, and the engine re-arms its checks.
		err := t.tx.Rollback(ctx)
		t.closed = true
		t.l.c.SavepointRolledBack()
		return err
	}
	defer t.end()
	t.ntx.ctx = ctx
	return t.dtx.Rollback()
}

// Exec runs sql (or a prepared statement's name) in the transaction.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.done() {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return t.l.exec(ctx, sql, args, t.stmts)
}

// Query runs sql in the transaction and returns its rows.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.done() {
		return &errRows{err: pgx.ErrTxClosed}, pgx.ErrTxClosed
	}
	return t.l.query(ctx, sql, args, t.stmts, nil)
}

// QueryRow runs sql in the transaction and returns its first row.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, _ := t.Query(ctx, sql, args...)
	return &row{rows: rows}
}

// SendBatch sends b in the transaction, every queued statement fenced with the
// transaction's token: a stale statement fails the batch with ErrFenced (and, on
// PostgreSQL, aborts the transaction). A statement that is refused before sending
// (ErrNoToken, ErrUnsupported) means nothing of the batch is sent.
func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.done() {
		return &batchResults{err: pgx.ErrTxClosed, closed: true}
	}
	return t.l.sendBatch(ctx, b, t.stmts, nil)
}

// CopyFrom copies rows into a table that is not guarded (see Pool.CopyFrom).
func (t *Tx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if t.done() {
		return 0, pgx.ErrTxClosed
	}
	return t.l.copyFrom(ctx, table, columns, src)
}

// Prepare prepares sql under name on the transaction's connection (see Conn.Prepare).
// On a pool's transaction the name is known to this transaction only: the statement is
// prepared on the connection under its text, and the name ends with the transaction.
func (t *Tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if t.done() {
		return nil, pgx.ErrTxClosed
	}
	return t.l.prepare(ctx, name, sql, t.stmts)
}

// LargeObjects returns pgx's large objects of the transaction (they are not rows of a
// guarded table, and are not fenced).
func (t *Tx) LargeObjects() pgx.LargeObjects { return t.tx.LargeObjects() }

// Conn returns the underlying *pgx.Conn (nil under a test double). It is not fenced:
// while the transaction is open, the connection's session check and table checks are
// re-armed, as Conn.Unwrap does. Once it has ended, a pool's connection is back in
// the pool: do not use it.
func (t *Tx) Conn() *pgx.Conn {
	if !t.closed {
		t.l.c.Unwrapped()
	}
	return t.l.n.pc
}
