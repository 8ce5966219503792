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

// Keyed claims. A MySQL/MariaDB claim runs as its keyed statements
// (plan.Plan.Keyed): the fencing UPDATE records the primary keys of the rows it
// stamps in the session and the read is restricted to them, so that it returns the
// rows just stamped, not others the holder stamped before with the same token. A table
// without a primary key, or with a FLOAT/DOUBLE one, runs the claim restricted by the
// token only, or refuses it where that is known to swap rows (plan.Plan.KeyRequired: a
// LIMIT, the statement's clock). The keys are the table's primary key columns
// (dialect.Tombstoner's PrimaryKeyQuery), asked once per pool and table and trusted for
// WithSchemaRecheck, like the lazy checks' other answers. With the schema checks off (a
// mock driver) the wrapper asks nothing and sends the statements restricted by the
// token only.

// keyedForm is a keyed template completed with a table's key columns (key, their
// names and types): one per template, so that a prepared statement prepares it once.
type keyedForm struct {
	key string
	p   *plan.Plan
	err error
}

// rowKey is a table's primary key columns and when they were read.
type rowKey struct {
	cols []plan.KeyColumn
	at   time.Time
}

// claimStatements returns the two statements of p's two-statement claim: its keyed
// forms where p has them and the table's key is known, else Pre and ClaimRead. A
// table without a primary key refuses a keyed claim.
func (c *conn) claimStatements(ctx context.Context, p *plan.Plan) (pre, read *plan.Plan, err error) {
	ts, ok := c.core.dialect.(dialect.Tombstoner)
	if p.Pre.Keyed == nil || p.ClaimRead == nil || p.ClaimRead.Keyed == nil || !ok || !c.core.cfg.schemaCheck {
		return p.Pre, p.ClaimRead, nil
	}
	cols, err := c.rowKey(ctx, ts, p.Guard)
	if err != nil {
		return nil, nil, err
	}
	if len(cols) == 0 && !p.KeyRequired {
		return p.Pre, p.ClaimRead, nil
	}
	if len(cols) == 0 {
		c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
		return nil, nil, &UnsupportedError{Table: p.Guard.String(), Reason: "a locking read with a LIMIT, or reading the statement's clock, of a table without a primary key: its claim tells the rows it stamped from others carrying the token by their key; give the table a primary key"}
	}
	if pre, err = c.core.keyedForm(p.Pre.Keyed, cols); err == nil {
		read, err = c.core.keyedForm(p.ClaimRead.Keyed, cols)
	}
	switch {
	case err != nil && !p.KeyRequired:
		return p.Pre, p.ClaimRead, nil // no exact key text: restricted by the token
	case err != nil:
		c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
		return nil, nil, asUnsupported(err)
	}
	return pre, read, nil
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
	k.keyed.Store(t, f)
	return f.p, f.err
}

// rowKey returns g's primary key columns in key order (none: no primary key).
func (c *conn) rowKey(ctx context.Context, ts dialect.Tombstoner, g *plan.Table) ([]plan.KeyColumn, error) {
	if v, ok := c.core.rowKeys.Load(g); ok && c.core.fresh(v.(rowKey).at) && !c.namesMoved {
		return v.(rowKey).cols, nil
	}
	q, args := ts.PrimaryKeyQuery(dialect.TableName{Schema: g.Schema, Name: g.Name})
	vals, err := c.queryStrings(ctx, q, args)
	if err != nil {
		return nil, &SchemaError{Table: g.String(), Problem: "the primary key query failed" + mockHint, Err: err}
	}
	cols := make([]plan.KeyColumn, 0, len(vals))
	for _, r := range vals {
		if len(r) < 2 {
			return nil, &SchemaError{Table: g.String(), Problem: "the primary key query returned no column type" + mockHint}
		}
		cols = append(cols, plan.KeyColumn{Name: r[0], Type: r[1]})
	}
	if !c.namesMoved {
		c.core.rowKeys.Store(g, rowKey{cols: cols, at: time.Now()})
	}
	return cols, nil
}

// nextClaim advances the connection's claim number, the nonce of its next keyed
// claim: a random start, then one up per claim, so that no nonce repeats on the
// session (a value a caller's own statement left in the variable included).
func (c *conn) nextClaim() {
	if c.claimSeq == 0 {
		c.claimSeq = rand.Int64N(1<<62) + 1
	}
	c.claimSeq++
}

// withNonce sets the arguments of p that are the claim's nonce (plan.ArgNonce) to n.
func withNonce(p *plan.Plan, args []driver.NamedValue, n int64) {
	for i, r := range p.Args {
		if r == plan.ArgNonce {
			args[i].Value = n
		}
	}
}
