package ormtest

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The dimensions of a generated GORM write (gormChain), in gormChain's field order.
var gormChainDims = chainDims{
	{"Model(pk)", "Model(0).Where(id=?)", "Table.Where(id=?)", "Model(0).Where(map)", "Model(0).Where(id IN ?)", "Model(0).Where(struct)"},
	{"", "Unscoped"},
	{"", "Where(balance>=0)", "Where(owner=? OR owner<>?)", "Not(id=id+9)", "Where(id BETWEEN)"},
	{"", "Select(balance)", "Omit(owner)"},
	{"Update", "UpdatesMap", "UpdatesStruct", "UpdateColumn", "UpdateExpr", "UpdateCase", "SoftDelete", "HardDelete"},
	{"", "Returning"},
	gormChainSessions,
}

var gormChainSessions = []string{"tx", "auto", "prepare", "explicitTx", "prepareAuto"}

// Choices the generator treats apart (indexes into the dimensions).
const (
	gormTargetTable     = 2
	gormScopeUnscoped   = 1
	gormActionStruct    = 2
	gormActionSoftDel   = 6
	gormActionHardDel   = 7
	gormReturning       = 1
	gormSessionExplicit = "explicitTx"
)

// gormChain is one generated GORM write: indexes into gormChainDims, and a model shape.
type gormChain struct {
	target, scope, where, sel, action, ret, session int
	shape                                           modelShape
}

func (c gormChain) String() string {
	return gormChainDims.desc(c.shape, c.target, c.scope, c.where, c.sel, c.action, c.ret, c.session)
}

// want: GORM's Unscoped().Delete is a hard delete, as is the HardDelete action.
func (c gormChain) want() chainWant {
	return wantOf(c.action == gormActionHardDel || c.action == gormActionSoftDel && c.scope == gormScopeUnscoped,
		c.action == gormActionSoftDel)
}

func (c gormChain) autocommit() bool {
	return slices.Contains([]string{"auto", "prepareAuto"}, gormChainSessions[c.session])
}

// newGormChain draws a chain for database b, leaving out what b does not have.
func newGormChain(r *rand.Rand, b backend) gormChain {
	p, shape := gormChainDims.draw(r, gormShapes)
	c := gormChain{target: p[0], scope: p[1], where: p[2], sel: p[3], action: p[4], ret: p[5], session: p[6], shape: shape}
	if !b.returning() {
		c.ret = 0
	}
	if b.lite() && c.want() == chainHardDeleted && c.autocommit() {
		c.ret = 0 // documented refusal: SQLite's two-statement DELETE … RETURNING outside a transaction
	}
	if c.target == gormTargetTable {
		c.ret = 0 // Table(…) with RETURNING: GORM itself panics scanning into no model
		if c.action == gormActionStruct {
			c.target = 1 // Table(…).Updates(struct) has no model to take the table from
		}
	}
	return c
}

func (c gormChain) run(ctx context.Context, dbs map[string]*gorm.DB, id int64) error {
	body := func(g *gorm.DB) error {
		g = g.WithContext(ctx)
		s := c.shape
		switch c.target {
		case 0:
			g = g.Model(s.zero(id))
		case 1:
			g = g.Model(s.zero(0)).Where("id = ?", id)
		case gormTargetTable:
			g = g.Table("accounts").Where("id = ?", id)
		case 3:
			g = g.Model(s.zero(0)).Where(map[string]any{"id": id})
		case 4:
			g = g.Model(s.zero(0)).Where("id IN ?", []int64{id, id + 9})
		case 5:
			g = g.Model(s.zero(0)).Where(s.zero(id))
		}
		if c.scope == gormScopeUnscoped || c.action == gormActionHardDel {
			g = g.Unscoped()
		}
		switch c.where {
		case 1:
			g = g.Where("balance >= ?", 0)
		case 2:
			g = g.Where("owner = ? OR owner <> ?", "a", "a")
		case 3:
			g = g.Not("id = ?", id+9)
		case 4:
			g = g.Where("id BETWEEN ? AND ?", id, id)
		}
		if c.want() == chainUpdated {
			switch c.sel {
			case 1:
				g = g.Select("balance")
			case 2:
				g = g.Omit("owner")
			}
		}
		if c.ret == gormReturning {
			g = g.Clauses(clause.Returning{})
		}
		switch c.action {
		case 0:
			return g.Update("balance", 777).Error
		case 1:
			return g.Updates(map[string]any{"balance": 777}).Error
		case gormActionStruct:
			return g.Updates(s.new(id, 777)).Error
		case 3:
			return g.UpdateColumn("balance", 777).Error
		case 4:
			return g.Update("balance", gorm.Expr("balance + ?", 677)).Error // seeded 100
		case 5:
			return g.Update("balance", gorm.Expr("CASE WHEN id = ? THEN ? ELSE balance END", id, 777)).Error
		default:
			return g.Delete(s.zero(0)).Error
		}
	}
	if gormChainSessions[c.session] == gormSessionExplicit {
		return dbs["tx"].WithContext(ctx).Transaction(func(tx *gorm.DB) error { return body(tx) })
	}
	return body(dbs[gormChainSessions[c.session]])
}

// TestGORMGeneratedChains: random GORM write chains (target × Unscoped × extra
// WHERE/Not/BETWEEN × Select/Omit × Update/Updates(map, struct)/UpdateColumn/Expr/CASE/
// soft and hard Delete × RETURNING × default transaction, SkipDefaultTransaction,
// PrepareStmt, an explicit Transaction), with the oracle and knobs of
// generated_test.go.
func TestGORMGeneratedChains(t *testing.T) {
	runGeneratedChains(t, func(t *testing.T, e *env) func(*rand.Rand) genChain {
		dbs := map[string]*gorm.DB{
			"tx":          openGORM(t, e, false),
			"auto":        openGORM(t, e, true),
			"prepare":     openGORMPrepared(t, e, false),
			"prepareAuto": openGORMPrepared(t, e, true),
		}
		return func(r *rand.Rand) genChain {
			c := newGormChain(r, e.b)
			return genChain{desc: c.String(), want: c.want(),
				run: func(ctx context.Context, id int64) error { return c.run(ctx, dbs, id) }}
		}
	})
}
