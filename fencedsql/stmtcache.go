package fencedsql

import (
	"container/list"
	"context"
	"database/sql/driver"
)

// stmtCache keeps, on one connection, the statements the wrapper prepared to send its
// own SQL (a guarded write's rewrite, a claim, a claimed read, the one-statement
// DELETE) to a driver that runs a statement with arguments only as a prepared
// statement: its ExecerContext or QueryerContext answers driver.ErrSkip
// (go-sql-driver/mysql without interpolateParams). Without the cache each such
// statement costs a PREPARE round trip, the EXECUTE and a CLOSE; with it a statement
// sent again on the connection is one EXECUTE, as pgx's statement cache makes it on
// PostgreSQL.
//
// The contract:
//   - Only statements the driver would have prepared anyway are cached: the protocol,
//     and so the result types, are those of the driver's own path. A driver that
//     executes arguments itself (pgx, SQLite, go-sqlmock) never reaches the cache.
//   - Bounded: at most max statements (WithStatementCache); the least recently used
//     is closed first. A server bounds prepared statements too (MySQL's
//     max_prepared_stmt_count counts every connection's).
//   - A statement whose use failed is closed and dropped; the next use prepares it
//     again.
//   - Emptied when a statement may have changed how the session resolves names or
//     its settings (USE, SET search_path, SET sql_mode …: a prepared statement keeps
//     what it resolved when prepared), when the caller takes the driver's connection
//     through Raw, and closed with the connection.
//   - A statement in use (its rows not closed yet) is closed when released, not while
//     in use. Like the connection, the cache is used by one goroutine at a time.
type stmtCache struct {
	max   int
	order *list.List // of *cachedStmt, most recently used first
	byKey map[string]*list.Element
}

// cachedStmt is a statement prepared for the wrapper's SQL, cached or not.
type cachedStmt struct {
	query  string
	st     driver.Stmt
	busy   int
	cached bool // in the cache; false once evicted, or never cached
}

func newStmtCache(max int) *stmtCache {
	if max <= 0 {
		return nil
	}
	return &stmtCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// acquire returns a prepared statement for query, marked in use: the cached one, or a
// new one it caches (when c has a cache). Pass it to release when done.
func (c *conn) acquire(ctx context.Context, query string) (*cachedStmt, error) {
	return c.acquireCached(ctx, query, true)
}

// acquireOnce is acquire for a statement run once per pool or table (the catalog
// queries): it is prepared out of the cache, so it takes no application statement's
// place, and closed by its release.
func (c *conn) acquireOnce(ctx context.Context, query string) (*cachedStmt, error) {
	return c.acquireCached(ctx, query, false)
}

func (c *conn) acquireCached(ctx context.Context, query string, cache bool) (*cachedStmt, error) {
	k := c.stmts
	if !cache {
		k = nil
	}
	if k != nil {
		if e, ok := k.byKey[query]; ok {
			k.order.MoveToFront(e)
			cs := e.Value.(*cachedStmt)
			cs.busy++
			return cs, nil
		}
	}
	st, err := c.rawPrepare(ctx, query)
	if err != nil {
		return nil, err
	}
	cs := &cachedStmt{query: query, st: st, busy: 1}
	if k != nil {
		cs.cached = true
		k.byKey[query] = k.order.PushFront(cs)
		for k.order.Len() > k.max {
			k.evict(k.order.Back())
		}
	}
	return cs, nil
}

// release ends a use of cs that acquire began; err is how the use ended. A failed use
// drops cs from the cache. A statement out of the cache is closed by its last release.
func (c *conn) release(cs *cachedStmt, err error) error {
	cs.busy--
	switch {
	case cs.cached && err != nil:
		c.stmts.evict(c.stmts.byKey[cs.query]) // closes it unless still in use
	case !cs.cached && cs.busy == 0:
		return cs.st.Close()
	}
	return nil
}

// evict takes e's statement out of the cache, closing it unless it is in use.
func (k *stmtCache) evict(e *list.Element) {
	cs := k.order.Remove(e).(*cachedStmt)
	delete(k.byKey, cs.query)
	cs.cached = false
	if cs.busy == 0 {
		_ = cs.st.Close() // a statement the server already forgot, or a broken connection
	}
}

// dropStatements empties c's statement cache (see stmtCache).
func (c *conn) dropStatements() {
	if k := c.stmts; k != nil {
		for k.order.Len() > 0 {
			k.evict(k.order.Front())
		}
	}
}
