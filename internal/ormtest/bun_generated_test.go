package ormtest

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/uptrace/bun"
)

// The dimensions of a generated bun write (bunChain), in bunChain's field order.
var bunChainDims = chainDims{
	{"Model(pk).WherePK", "Model(0).Where(id=?)", "Model(map).TableExpr", "Model(0).Where(id IN bun.In)", "Model(0).WhereGroup"},
	{"", "WhereAllWithDeleted"},
	{"", "Where(balance>=0)", "WhereGroup(WhereOr)", "Where(id BETWEEN)"},
	{"Set", "SetExpr", "Column", "Value", "SoftDelete", "ForceDelete", "Bulk"},
	{"", "Returning"},
	bunChainSessions,
}

var bunChainSessions = []string{"auto", "RunInTx", "Conn", "NestedTx"}

// Choices the generator treats apart (indexes into the dimensions).
const (
	bunTargetPK       = 0
	bunTargetMap      = 2
	bunTargetIn       = 3
	bunTargetGroup    = 4
	bunScopeAll       = 1
	bunActionColumn   = 2
	bunActionValue    = 3
	bunActionSoftDel  = 4
	bunActionForceDel = 5
	bunActionBulk     = 6
	bunReturning      = 1
)

// bunChain is one generated bun write: indexes into bunChainDims, and a model shape.
type bunChain struct {
	target, scope, where, action, ret, session int
	shape                                      modelShape
}

func (c bunChain) String() string {
	return bunChainDims.desc(c.shape, c.target, c.scope, c.where, c.action, c.ret, c.session)
}

func (c bunChain) want() chainWant {
	return wantOf(c.action == bunActionForceDel, c.action == bunActionSoftDel)
}

func (c bunChain) inTx() bool {
	return slices.Contains([]string{"RunInTx", "NestedTx"}, bunChainSessions[c.session])
}

// newBunChain draws a chain for database b, leaving out what b does not have.
func newBunChain(r *rand.Rand, b backend) bunChain {
	p, shape := bunChainDims.draw(r, bunShapes)
	c := bunChain{target: p[0], scope: p[1], where: p[2], action: p[3], ret: p[4], session: p[5], shape: shape}
	if !b.returning() {
		c.ret = 0
	}
	if b.my() && c.action == bunActionBulk {
		c.action = 0 // documented refusal: Bulk() is a MySQL multi-table UPDATE
	}
	if b.lite() && c.action == bunActionForceDel && !c.inTx() {
		c.ret = 0 // documented refusal: SQLite's two-statement DELETE … RETURNING outside a transaction
	}
	return c
}

// bunWhere adds the chain's extra condition to q (an *bun.UpdateQuery or *bun.DeleteQuery).
func bunWhere[Q interface {
	Where(string, ...any) Q
	WhereOr(string, ...any) Q
	WhereGroup(string, func(Q) Q) Q
}](q Q, where int, id int64) Q {
	switch where {
	case 1:
		return q.Where("balance >= ?", 0)
	case 2:
		// WhereOr inside a group: bun writes a leading WhereOr before WherePK as
		// (… OR …) AND pk, so the group is what a caller writes.
		return q.WhereGroup(" AND ", func(q Q) Q { return q.Where("id = ?", id).WhereOr("id = ?", id+9) })
	case 3:
		return q.Where("id BETWEEN ? AND ?", id, id)
	}
	return q
}

func (c bunChain) delete(db bun.IDB, id int64) *bun.DeleteQuery {
	s := c.shape
	q := db.NewDelete()
	switch c.target {
	case bunTargetPK:
		q = q.Model(s.zero(id)).WherePK()
	case bunTargetIn:
		q = q.Model(s.zero(0)).Where("id IN (?)", bun.In([]int64{id, id + 9}))
	default:
		q = q.Model(s.zero(0)).Where("id = ?", id)
	}
	if c.scope == bunScopeAll {
		q = q.WhereAllWithDeleted()
	}
	q = bunWhere(q, c.where, id)
	if c.action == bunActionForceDel {
		q = q.ForceDelete()
	}
	return q
}

func (c bunChain) update(db bun.IDB, id int64) *bun.UpdateQuery {
	s := c.shape
	q := db.NewUpdate()
	if c.action == bunActionBulk {
		q = q.Model(s.slice(id)).Column("balance").Bulk() // rows id and id+1, balance 777
		if c.scope == bunScopeAll {
			q = q.WhereAllWithDeleted()
		}
		return q
	}
	switch c.target {
	case bunTargetPK:
		q = q.Model(s.new(id, 777)).WherePK()
	case bunTargetMap:
		q = q.Model(&map[string]any{"balance": 777}).TableExpr("accounts").Where("id = ?", id)
	case bunTargetIn:
		q = q.Model(s.zero(0)).Where("id IN (?)", bun.In([]int64{id, id + 9}))
	case bunTargetGroup:
		q = q.Model(s.zero(0)).WhereGroup(" AND ", func(q *bun.UpdateQuery) *bun.UpdateQuery {
			return q.Where("id = ?", id).WhereOr("id = ?", id+9)
		})
	default:
		q = q.Model(s.zero(0)).Where("id = ?", id)
	}
	if c.scope == bunScopeAll && c.target != bunTargetMap {
		q = q.WhereAllWithDeleted()
	}
	q = bunWhere(q, c.where, id)
	switch {
	case c.target == bunTargetMap:
		// the map is the SET list
	case c.action == 0:
		q = q.Set("balance = ?", 777)
	case c.action == 1:
		q = q.Set("balance = balance + ?", 677) // seeded 100
	case c.action == bunActionColumn && c.target == bunTargetPK:
		q = q.Column("balance")
	case c.action == bunActionValue:
		q = q.Value("balance", "?", 777)
	default:
		q = q.Set("balance = CASE WHEN id = ? THEN ? ELSE balance END", id, 777)
	}
	return q
}

func (c bunChain) run(ctx context.Context, bdb *bun.DB, id int64) error {
	body := func(ctx context.Context, db bun.IDB) error {
		var err error
		if c.action == bunActionSoftDel || c.action == bunActionForceDel {
			d := c.delete(db, id)
			if c.ret == bunReturning {
				d = d.Returning("id")
			}
			_, err = d.Exec(ctx)
		} else {
			u := c.update(db, id)
			if c.ret == bunReturning && c.action != bunActionBulk {
				u = u.Returning("id")
			}
			_, err = u.Exec(ctx)
		}
		return err
	}
	switch bunChainSessions[c.session] {
	case "RunInTx":
		return bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return body(ctx, tx) })
	case "Conn":
		conn, err := bdb.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		return body(ctx, conn)
	case "NestedTx":
		return bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return tx.RunInTx(ctx, nil, func(ctx context.Context, tx2 bun.Tx) error { return body(ctx, tx2) })
		})
	}
	return body(ctx, bdb)
}

// TestBunGeneratedChains: random bun write chains (WherePK/Where/map with TableExpr/
// bun.In/WhereGroup × WhereAllWithDeleted × extra WHERE × Set/Set expression/Column/
// Value/soft delete/ForceDelete/Bulk × Returning × autocommit, RunInTx, db.Conn, a
// nested RunInTx), with the oracle and knobs of generated_test.go.
func TestBunGeneratedChains(t *testing.T) {
	runGeneratedChains(t, func(t *testing.T, e *env) func(*rand.Rand) genChain {
		bdb := openBun(e)
		return func(r *rand.Rand) genChain {
			c := newBunChain(r, e.b)
			return genChain{desc: c.String(), want: c.want(),
				run: func(ctx context.Context, id int64) error { return c.run(ctx, bdb, id) }}
		}
	})
}
