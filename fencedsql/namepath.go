package fencedsql

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// samePath makes sure c may use the name verdicts the pool caches (docs/design.md
// G13): the pool's verdicts hold for connections that resolve names as the connection
// that made them did, and a connection opened later may not — its resolution comes
// from defaults set outside the wrapper (red-team rt40b F2: ALTER DATABASE … SET
// search_path run by another client made the connections the pool opened afterwards
// resolve a guarded name to another schema's table, which the cached verdict then
// covered, and a stale write stored the fencing NULL there). So once per connection,
// before it first reads or stores a pool verdict, the dialect's name resolution
// (dialect.NamePather) is read — without a query where the dialect has it already
// (dialect.NamePathTracker) — and compared with the pool's, which the first
// connection to ask sets: a connection that differs caches its checks on itself from
// then on (rearmNames), as after SET search_path, so the relation it resolves to is
// checked (and refused if unfit). A connection whose names already moved caches its
// own anyway and is not compared. The same read gives the identity of the server c
// reached (dialect.ServerIdentifier), read on every connection, and compared with the
// pool's each time c is about to use a pool verdict (sameServer, serverchange.go: one
// atomic load when unchanged). With the lazy checks off (WithSchemaCheck(false))
// nothing is read. A failed read is a *SchemaError (a *CheckCutError when the context
// ended or the connection failed: checkQueryErr): nothing is sent.
func (c *conn) samePath(ctx context.Context) error {
	k := c.core
	if !k.cfg.schemaCheck {
		return nil
	}
	if c.serverSeen {
		// The pool's server may have changed since c compared (serverchange.go).
		if err := c.sameServer(ctx, c.server); err != nil {
			return err
		}
		if c.pathSeen || c.namesMoved {
			return nil
		}
	}
	d, ok := k.dialect.(dialect.NamePather)
	if !ok {
		c.pathSeen, c.serverSeen = true, true
		return nil
	}
	path, server, err := c.namePath(ctx, d)
	if err != nil {
		return err
	}
	if !c.serverSeen {
		if err := c.sameServer(ctx, server); err != nil {
			return err
		}
		c.server, c.serverSeen = server, true
	}
	if c.pathSeen || c.namesMoved {
		return nil
	}
	c.pathSeen = true
	if k.namePath.CompareAndSwap(nil, &path) {
		return nil
	}
	if pool := k.namePath.Load(); *pool != path {
		c.rearmNames()
		k.cfg.logger.WarnContext(ctx, "fencedsql: a new connection resolves table names otherwise than the pool's first (a search_path, role or default database set outside the pool since); its schema checks are made per connection",
			"pool", *pool, "connection", path)
	}
	return nil
}

// namePath returns c's name resolution and, where the dialect reads it
// (dialect.ServerIdentifier), the identity of the server c reached ("" unknown): the
// dialect's tracked values, else its query's.
func (c *conn) namePath(ctx context.Context, d dialect.NamePather) (path, server string, err error) {
	si, identifies := d.(dialect.ServerIdentifier)
	if t, ok := d.(dialect.NamePathTracker); ok {
		if v, ok := t.TrackedNamePath(ctx, c.raw); ok {
			if !identifies {
				return v, "", nil
			}
			if id, ok := si.TrackedServerIdentity(ctx, c.raw); ok {
				return v, id, nil
			}
		}
	}
	vals, err := c.queryStrings(ctx, d.NamePathQuery(), nil)
	if err != nil {
		return "", "", checkQueryErr(ctx, c.core.dialect, "", "the name resolution query failed", err)
	}
	if len(vals) != 1 || len(vals[0]) < 1 || len(vals[0]) > 2 {
		return "", "", &SchemaError{Problem: "the name resolution query did not return one value" + mockHint}
	}
	if identifies && len(vals[0]) == 2 {
		// A mock answering with the name resolution alone leaves it unknown.
		server = vals[0][1]
	}
	return vals[0][0], server, nil
}
