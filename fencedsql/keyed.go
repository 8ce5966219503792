package fencedsql

import (
	"context"
	"database/sql/driver"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// Keyed statements. A MySQL/MariaDB claim, and a DELETE run as two statements, run
// as their keyed forms (plan.Plan.Keyed): the fencing UPDATE records the primary keys
// of the rows it stamps in the session and the second statement (the claim's read, the
// DELETE) is restricted to them, so that it reads or deletes the rows just stamped,
// not others the holder stamped before with the same token. A table without a primary
// key, or with a FLOAT/DOUBLE one, and a claim that fixes its whole integer key to an
// integer (a point claim, pointClaim), run the statements restricted by the token only,
// or refuse them where that is known to swap rows (a claim's plan.Plan.KeyRequired: a
// LIMIT, the statement's clock; the unkeyed DELETE's plan.Plan.TwoStepErr). The keys
// are the table's primary key columns (dialect.Tombstoner's PrimaryKeyQuery), asked
// once per pool and table and trusted for WithSchemaRecheck, like the lazy checks'
// other answers. With the schema checks off (a mock driver) the wrapper asks nothing
// and sends the statements restricted by the token only.

// keyedForm is a keyed template completed with a table's key columns (key, their
// names and types): one per template, so that a prepared statement prepares it once.
type keyedForm struct {
	key string
	p   *plan.Plan
	err error
}

// rowKey is a table's primary key columns, the schema the table resolved to, and
// when they were read.
type rowKey struct {
	cols   []plan.KeyColumn
	schema string
	at     time.Time
}

// claimStatements returns the two statements of p's two-statement claim, run with
// args: its keyed forms where p has them and the table's key is known (keyedPair),
// else Pre and ClaimRead — also when its selection fixes the whole key to one integer
// (pointClaim). A claim that requires its key (plan.Plan.KeyRequired) on a table
// without an exact one is refused.
func (c *conn) claimStatements(ctx context.Context, p *plan.Plan, args []driver.NamedValue) (pre, read *plan.Plan, err error) {
	if point, err := c.pointClaim(ctx, p, args); err != nil || point {
		return p.Pre, p.ClaimRead, err
	}
	pre, read, why, err := c.keyedPair(ctx, p.Guard, p.Pre, p.ClaimRead)
	switch {
	case err != nil:
		return nil, nil, err
	case pre != nil:
		return pre, read, nil
	case !p.KeyRequired:
		return p.Pre, p.ClaimRead, nil
	}
	c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
	if why != nil {
		return nil, nil, asUnsupported(why)
	}
	return nil, nil, &UnsupportedError{Table: p.Guard.String(), Reason: "a locking read with a LIMIT, or reading the statement's clock, of a table without a primary key: its claim tells the rows it stamped from others carrying the token by their key; give the table a primary key"}
}

// pointClaim reports whether the claim p, run with args, selects at most one row by
// its table's primary key (plan.Plan.FixesKey): its read can return no other row than
// the one its fencing UPDATE stamps, so neither needs the keyed record.
func (c *conn) pointClaim(ctx context.Context, p *plan.Plan, args []driver.NamedValue) (bool, error) {
	if len(p.Point) == 0 || p.Pre == nil || p.Pre.Keyed == nil || !c.core.cfg.schemaCheck {
		return false, nil
	}
	ts, ok := c.core.dialect.(dialect.Tombstoner)
	if !ok {
		return false, nil
	}
	cols, err := c.rowKey(ctx, ts, p.Guard)
	if err != nil {
		return false, err
	}
	return p.FixesKey(cols, func(i int) (any, bool) {
		if i >= len(args) || args[i].Name != "" || args[i].Ordinal != i+1 {
			return nil, false
		}
		return args[i].Value, true
	}), nil
}

// deleteStatements returns the two statements of p's two-statement DELETE: its keyed
// forms where p has them and the table's key is known (keyedPair), else Pre and p.
// The caller judges the DELETE returned (twoStepRefused).
func (c *conn) deleteStatements(ctx context.Context, p *plan.Plan) (pre, del *plan.Plan, err error) {
	pre, del, _, err = c.keyedPair(ctx, p.Guard, p.Pre, p)
	if err != nil || pre != nil {
		return pre, del, err
	}
	return p.Pre, p, nil
}

// keyedPair returns the keyed forms of first and second (plan.Plan.Keyed), completed
// with g's primary key columns, or as they are when they name rows by locator. They
// are nil when a form is missing, the schema checks are off, g has no primary key or
// (by locator) its locator does not identify its rows, and also when its key has no
// exact text (why says so).
func (c *conn) keyedPair(ctx context.Context, g *plan.Table, first, second *plan.Plan) (pre, next *plan.Plan, why, err error) {
	if first == nil || first.Keyed == nil || second == nil || second.Keyed == nil || !c.core.cfg.schemaCheck {
		return nil, nil, nil, nil
	}
	if second.Keyed.ClaimLocator {
		// Keyed by row locator (PostgreSQL's DELETE): complete, where a locator
		// identifies the table's rows.
		k, ok := c.core.dialect.(dialect.LocatorChecker)
		if !ok {
			return nil, nil, nil, nil
		}
		yes, err := c.tableVerdict(ctx, &c.core.locator, g, "row locator", k.LocatorQuery)
		if err != nil || !yes {
			return nil, nil, nil, err
		}
		return first.Keyed, second.Keyed, nil, nil
	}
	ts, ok := c.core.dialect.(dialect.Tombstoner)
	if !ok {
		return nil, nil, nil, nil
	}
	cols, err := c.rowKey(ctx, ts, g)
	if err != nil || len(cols) == 0 {
		return nil, nil, nil, err
	}
	if pre, why = c.core.keyedForm(first.Keyed, cols); why == nil {
		next, why = c.core.keyedForm(second.Keyed, cols)
	}
	if why != nil {
		return nil, nil, why, nil
	}
	return pre, next, nil, nil
}

// keyedForm returns the template t completed with cols (plan.Plan.WithRowKey), made
// once per template and key.
func (k *core) keyedForm(t *plan.Plan, cols []plan.KeyColumn) (*plan.Plan, error) {
	var sb strings.Builder
	for _, c := range cols {
		sb.WriteString(c.Name + "\x00" + c.Type + "\x00")
	}
	key := sb.String()
	if v, ok := k.keyed.Load(t); ok && v.(keyedForm).key == key {
		return v.(keyedForm).p, v.(keyedForm).err
	}
	f := keyedForm{key: key}
	f.p, f.err = t.WithRowKey(cols, k.dialect.QuoteIdent)
	if f.err == nil && f.p.ListArg >= 0 {
		f.p = f.p.WithKeyList(listChunk) // a listed DELETE (delete_listed.go)
	}
	k.keyed.Store(t, f)
	return f.p, f.err
}

// rowKey returns g's primary key columns in key order (none: no primary key).
func (c *conn) rowKey(ctx context.Context, ts dialect.Tombstoner, g *plan.Table) ([]plan.KeyColumn, error) {
	k, err := c.rowKeyOf(ctx, ts, g)
	return k.cols, err
}

// rowKeyOf returns g's primary key columns in key order and the schema g resolves to
// (the primary key query's fourth column; "" when it has none).
func (c *conn) rowKeyOf(ctx context.Context, ts dialect.Tombstoner, g *plan.Table) (rowKey, error) {
	if err := c.samePath(ctx); err != nil {
		return rowKey{}, err
	}
	if v, ok := c.core.rowKeys.Load(g); ok && c.core.fresh(v.(rowKey).at) && !c.namesMoved {
		return v.(rowKey), nil
	}
	q, args := ts.PrimaryKeyQuery(dialect.TableName{Schema: g.Schema, Name: g.Name})
	vals, err := c.queryStrings(ctx, q, args)
	if err != nil {
		return rowKey{}, checkQueryErr(ctx, c.core.dialect, g.String(), "the primary key query failed", err)
	}
	k := rowKey{cols: make([]plan.KeyColumn, 0, len(vals)), at: time.Now()}
	for _, r := range vals {
		if len(r) < 2 {
			return rowKey{}, &SchemaError{Table: g.String(), Problem: "the primary key query returned no column type" + mockHint}
		}
		k.cols = append(k.cols, plan.KeyColumn{Name: r[0], Type: r[1]})
		if len(r) >= 4 {
			k.schema = r[3]
		}
	}
	if !c.namesMoved {
		c.core.rowKeys.Store(g, k)
	}
	return k, nil
}

// table is g in the schema its primary key query resolved it to — exact, as the
// catalog spells it (dialect.TableName.InCatalogSchema: a search_path schema "odd sch"
// or "Mixed" is quoted as it is, never folded, red-team rt56d F4) — or, when the
// query named none, g as written.
func (k rowKey) table(g *plan.Table) dialect.TableName {
	t := dialect.TableName{Schema: g.Schema, Name: g.Name}
	if k.schema != "" {
		t = t.InCatalogSchema(k.schema)
	}
	return t
}

// keyedNonce returns the nonce of the next keyed statements on this connection: a
// random start, then one up per pair, so that no nonce repeats on the session (a
// value a caller's own statement left in the variable included). Before the first it
// defines the keyed statements' session variables (plan.KeyedSessionInit): a
// statement that is not prepared reads one the session never set as a constant.
func (c *conn) keyedNonce(ctx context.Context) (int64, error) {
	if c.claimSeq == 0 {
		if _, err := c.execOwn(ctx, plan.KeyedSessionInit); err != nil {
			return 0, checkQueryErr(ctx, c.core.dialect, "", "setting the keyed statements' session variables failed", err)
		}
		c.claimSeq = rand.Int64N(1<<62) + 1
	}
	c.claimSeq++
	return c.claimSeq, nil
}

// withNonce sets the arguments of p that are the claim's nonce (plan.ArgNonce) to n.
func withNonce(p *plan.Plan, args []driver.NamedValue, n int64) {
	for i, r := range p.Args {
		if r == plan.ArgNonce {
			args[i].Value = n
		}
	}
}

// keyedTooLarge returns err, the failure of pre, a keyed statement's fencing UPDATE, as
// an *UnsupportedError when it is the record of the stamped keys growing past the
// server's limit on a value (dialect.ErrorTooLarge); nil otherwise. The statement
// failed whole: nothing was stamped.
func (c *conn) keyedTooLarge(pre *plan.Plan, err error) error {
	if pre.KeyQual == "" || c.core.dialect.Classify(err).Kind != dialect.ErrorTooLarge {
		return nil
	}
	c.core.metrics.count(c.core.metrics.unsupported, pre.Guard)
	return &UnsupportedError{Table: pre.Guard.String(), Reason: "the keyed statement's record of the rows it stamped grew past the server's limit on a value (max_allowed_packet): the statement failed whole; delete or claim fewer rows at a time (a LIMIT), or install the guard (a DELETE then runs as one statement, without a record)"}
}
