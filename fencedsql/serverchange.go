package fencedsql

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// The server behind a running pool (docs/design.md G14). The pool caches what it
// learned from "the database" — each guarded table's lazy check (WithSchemaRecheck's
// interval), the dialect's verdicts on its tables, and at its first connection what
// the database records as guarded (the registry, the guard triggers: whether a floor
// may be in force, core.guardRecorded). After a failover the DSN reaches another
// server, the promoted replica, whose catalog may differ: an asynchronous failover may
// have lost a guard's installation with the tail, and a verdict read on the old
// primary then let a stale write through on the new one for up to a minute; a pool
// whose first connection found nothing recorded as guarded skipped the floor coverage
// for its life.
//
// So each connection reads, once, an identity of the server it reached
// (dialect.ServerIdentifier: with its name resolution, samePath — no round trip of its
// own), and:
//
//   - a cached verdict is trusted only on a connection to the server it was made on
//     (it carries that server's identity: checkedAt, verdict.server), so connections
//     to the old and the new server at once never share one, whatever the order in
//     which they run;
//   - the pool keeps the identity of the server its first-connection reads were made
//     on (serverState): a connection that reached another server drops the pool's
//     verdicts (forgetNames) and reads the records again on that server before its
//     write (rereadRecords): a floor-recording database turns the floor coverage on,
//     and a table recorded as guarded there that the pool does not guard (its
//     rewriter cannot grow under running statements) stops the pool's writes, as an
//     unguarded relative does (relativeBlock), until it is reopened. A pool whose
//     connections alternate between two servers reads them again at each change.
//
// A connection whose identity is unknown (a dialect without ServerIdentifier, SQLite:
// one file; a mock answering NamePathQuery with one column) is taken for one to the
// pool's server.

// serverState is the identity of the server the pool's first-connection reads were
// made on (nil before any connection read one), and the lock under which a change is
// handled.
type serverState struct {
	id atomic.Pointer[string]
	mu sync.Mutex
}

// checkedAt is a lazy check's success in the pool's cache (core.checked): when, and on
// which server (conn.server).
type checkedAt struct {
	at     time.Time
	server string
}

// sameServer makes sure the pool's first-connection reads hold for c's server (its
// identity id, read by samePath; "" unknown): when the pool's reads were made on
// another server — or on another connection before any identity was known — the
// pool's verdicts are dropped and the records read again through c (rereadRecords)
// before the pool takes id for its server. The unchanged case is one atomic load and
// a string comparison. A failed read returns its error (the write is not sent) and
// leaves the pool's server as it was: the next write reads again; a server whose
// records stop the pool (rereadRecords) becomes the pool's, its refusal returned.
func (c *conn) sameServer(ctx context.Context, id string) error {
	k := c.core
	if id == "" {
		return nil
	}
	if cur := k.server.id.Load(); cur != nil && *cur == id {
		return nil
	}
	k.server.mu.Lock()
	defer k.server.mu.Unlock()
	cur := k.server.id.Load()
	switch {
	case cur != nil && *cur == id:
		return nil
	case cur == nil && c.opener:
		// The records were read on this connection (open).
		k.server.id.Store(&id)
		return nil
	}
	k.forgetNames()
	err := k.rereadRecords(ctx, c)
	if err != nil && k.relatives.refusal() == nil {
		return err // nothing was learned: the next write reads again
	}
	// Read (the pool may now be stopped: relativeBlock, not asked again per write).
	k.server.id.Store(&id)
	if cur != nil {
		k.cfg.logger.WarnContext(ctx, "fencedsql: a connection reached another server than the one the pool's checks were made on (a failover?); the pool's verdicts were dropped and the records read again there",
			"was", *cur, "now", id)
	}
	return err
}

// rereadRecords reads again, through c, what the database records as guarded (as open
// does, after the same session check): the floor coverage is turned on when a table is
// recorded as guarded (core.guardRecorded; never off again: a database without a
// floor has nothing for it to refuse), and a table recorded as guarded that the pool
// does not guard, or guards on other columns, stops the pool's writes
// (relativeBlock): a pool opened now would guard it, and this one's rewriter cannot
// grow under running statements.
func (k *core) rereadRecords(ctx context.Context, c *conn) error {
	if err := c.checkRecordsSession(ctx); err != nil {
		return err
	}
	rec, err := k.loadRecords(ctx, c)
	if err != nil {
		return err
	}
	if len(rec.Registered) > 0 || len(rec.Triggered) > 0 {
		k.guardRecorded.Store(true)
	}
	unguarded := rec.TriggerOnly(k.guardsTriggered)
	for _, rs := range rec.Registered {
		if !k.guardsRecorded(rs) {
			unguarded = append(unguarded, rs)
		}
	}
	if len(unguarded) == 0 {
		return nil
	}
	names := make([]string, len(unguarded))
	for i, gs := range unguarded {
		names[i] = gs.Table
	}
	e := &SchemaError{Table: unguarded[0].Table,
		Problem: "the pool's connections reached another server (a failover?), which records as guarded " + strings.Join(names, ", ") +
			" — tables this pool does not guard, or guards on other columns: it stops its writes, which could reach them unfenced",
		Fix: "reopen the pool (a pool opened now guards what this server records)"}
	k.relatives.err.CompareAndSwap(nil, e)
	return e
}

// guardsTriggered reports whether the pool guards t, a table recorded as guarded by
// its triggers alone, on the columns its guard checks (schema.Records.TriggerOnly's
// known: same is the answer, namesake is never asked for here — only the names of the
// tables the pool does not guard are reported). A guard whose text names no columns is
// taken as guarded when the pool guards its name (the lazy check judges it).
func (k *core) guardsTriggered(t schema.TriggerRecord) (same, namesake bool) {
	if k.rw.Lookup([]string{t.Name}) == nil {
		return false, false
	}
	if t.TokenColumn == "" {
		return true, false
	}
	ts := t.Spec(true)
	for _, gs := range k.cfg.guards {
		if sameGuardedTable(k.dialect, gs, ts) {
			return sameColumns(k.dialect, gs, ts), false
		}
	}
	return true, false
}

// guardsRecorded reports whether the pool guards rs, a table recorded as guarded, on
// its recorded columns.
func (k *core) guardsRecorded(rs schema.GuardSpec) bool {
	for _, gs := range k.cfg.guards {
		if sameGuardedTable(k.dialect, gs, rs) {
			return sameColumns(k.dialect, gs, rs)
		}
	}
	return false
}
