package fencedsql

import (
	"context"
	"database/sql/driver"
	"io"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// verifyTable runs the lazy checks of a guarded table before a guarded write is sent
// or prepared (guardChecks): the table's fencing columns, its declaration
// (SchemaLinter), its floor coverage where the database has a token floor
// (floorGuard) and the doors a statement through the pool opens (TriggerDoorFinder:
// other tables' triggers that write it, its own BEFORE triggers that may assign its
// fencing columns, updatable views, rules, a guard a table swap lost) and its
// inheritance parents and partitioned roots (checkAncestors: one the pool does not
// guard, added by a migration, stops the pool's writes) (once per name as the
// statements write it, see lookup: per DB, or per connection once a statement may have
// changed how it resolves names, resolvesNames, or from its start when it opened
// resolving names otherwise than the pool's first, samePath; dropped for the pool after
// DDL that may move a guarded name, forgetNames; on a connection whose names moved, a
// temporary table the catalog cannot see is refused first, tempShadow). Only successes
// are cached, so fixing the schema takes effect without a restart; a success is
// trusted for WithSchemaRecheck's interval, so a schema changed while the pool runs is
// checked again. WithSchemaCheck(false) turns every table check off. The session check
// (verifySession) runs before a write only (guardedArgs), not at Prepare.
func (c *conn) verifyTable(ctx context.Context, g *plan.Table) error {
	k := c.core
	if !k.cfg.schemaCheck {
		return nil
	}
	if err := c.samePath(ctx); err != nil {
		return err
	}
	c.syncNames()
	if c.namesMoved {
		if at, ok := c.checkedNames[g]; ok && k.fresh(at) {
			return nil
		}
	} else if v, ok := k.checked.Load(g); ok && v.(checkedAt).server == c.server && k.fresh(v.(checkedAt).at) {
		// made on c's server (serverchange.go)
		return nil
	}
	gen := k.namesGen.Load()
	t := dialect.TableName{Schema: g.Schema, Name: g.Name}
	if err := c.tempShadow(ctx, g, t); err != nil {
		return err
	}
	v, err := schema.Columns(ctx, c.catalog(), k.dialect, t, g.TokenCol, g.VerCol)
	if err != nil {
		return checkQueryErr(ctx, c.core.dialect, g.String(), "the column check query failed", err)
	}
	if !v.OK() {
		return &SchemaError{Table: g.String(), Problem: strings.Join(v.Problems, "; "), Fix: strings.Join(v.Fix, "; ")}
	}
	if err := lintGuard(ctx, c.catalog(), k.dialect, g, t); err != nil {
		return err
	}
	if err := triggerGuard(ctx, c.catalog(), k.dialect, g, t); err != nil {
		return err
	}
	if err := c.floorGuard(ctx, g, t); err != nil { // floorguard.go (red-team rt54c F1)
		return err
	}
	if err := c.checkAncestors(ctx, g); err != nil { // relatives.go (red-team rt42b F1)
		return err
	}
	if c.namesMoved {
		if c.checkedNames == nil {
			c.checkedNames = map[*plan.Table]time.Time{}
		}
		c.checkedNames[g] = time.Now()
	} else if k.namesGen.Load() == gen {
		// not across a forgetNames: what it saw may be the name's old relation
		k.checked.Store(g, checkedAt{at: time.Now(), server: c.server})
	}
	return nil
}

// fresh reports whether a verdict reached at at is still trusted (WithSchemaRecheck: a
// negative bound, NeverRecheck, trusts it for the pool's life; 0 never trusts it).
func (k *core) fresh(at time.Time) bool {
	return k.cfg.recheck < 0 || time.Since(at) < k.cfg.recheck
}

// mockHint follows the message of a failed check query: the usual cause is a mock
// driver without an expectation for it.
const mockHint = " (under a mock driver such as go-sqlmock, turn the checks off with fencedsql.WithSchemaCheck(false), or use the fencedtest package)"

// catalog is queryStrings as a dialect.CatalogQuery, for the schema checks.
func (c *conn) catalog() dialect.CatalogQuery {
	return func(ctx context.Context, q string, args ...any) ([][]string, error) {
		return c.queryStrings(ctx, q, args)
	}
}

// execOwn runs an internal statement without arguments on the wrapped connection,
// prepared out of the statement cache (acquireOnce) by a driver that runs statements
// only as prepared statements.
func (c *conn) execOwn(ctx context.Context, q string) (driver.Result, error) {
	res, err := c.rawExec(ctx, q, nil)
	if err != driver.ErrSkip {
		return res, err
	}
	cs, err := c.acquireOnce(ctx, q)
	if err != nil {
		return nil, err
	}
	res, err = stmtExec(ctx, cs.st, nil)
	c.release(cs, err)
	return res, err
}

// queryStrings runs an internal query on the wrapped connection and returns its rows
// as strings. A driver that runs queries only as prepared statements gets the query
// prepared out of the statement cache (acquireOnce). A query that failed because the
// session lost the prepared statement the driver sent is sent once more after the
// dialect forgot the cached ones (retryLost, driverstatements.go).
func (c *conn) queryStrings(ctx context.Context, q string, args []any) ([][]string, error) {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	out, err := c.queryStringsOnce(ctx, q, nv)
	if err != nil && c.retryLost(ctx, err) {
		out, err = c.queryStringsOnce(ctx, q, nv)
	}
	return out, err
}

// queryStringsOnce is queryStrings without the retry.
func (c *conn) queryStringsOnce(ctx context.Context, q string, nv []driver.NamedValue) ([][]string, error) {
	rows, err := c.rawQuery(ctx, q, nv)
	if err == driver.ErrSkip {
		var cs *cachedStmt
		if cs, err = c.acquireOnce(ctx, q); err != nil {
			return nil, err
		}
		if rows, err = stmtQuery(ctx, cs.st, nv); err != nil {
			c.release(cs, err)
			return nil, err
		}
		rows = &closeStmtRows{Rows: rows, c: c, cs: cs}
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols := len(rows.Columns())
	var out [][]string
	for {
		dest := make([]driver.Value, cols)
		if err := rows.Next(dest); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		row := make([]string, cols)
		for i, v := range dest {
			row[i] = dialect.CatalogText(v)
		}
		out = append(out, row)
	}
	return out, nil
}
