package ormtest

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// ormCall is one ORM call on row id (and, for a batch, id+1).
type ormCall struct {
	name string
	run  func(ctx context.Context, id int64) error
}

// TestSoftDeletedStaysDeleted (red-team rt53c): a row soft-deleted by a newer holder is
// not restored or changed by an older holder's ORM call that would restore or rewrite
// it — GORM Save, OnConflict{UpdateAll}, Unscoped Update(deleted_at = nil),
// FirstOrCreate, Unscoped Updates (default transaction and SkipDefaultTransaction, and
// the model shapes, in turn); bun upsert, UpdateModel and Set deleted_at = NULL with
// WhereAllWithDeleted, Bulk with WhereAllWithDeleted, an upsert in RunInTx. Each call
// changes nothing and, if it fails, fails with one of the wrapper's typed errors
// (ErrFenced; ErrDuplicate where GORM's FirstOrCreate does not see the deleted row and
// INSERTs).
func TestSoftDeletedStaysDeleted(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			bdb := openBun(e)
			// Every call once, the GORM modes and the model shapes taken in turn.
			gormCalls := []struct {
				name string
				run  func(g *gorm.DB, s modelShape, id int64) error
			}{
				{"Save", func(g *gorm.DB, s modelShape, id int64) error { return g.Save(s.new(id, 777)).Error }},
				{"UpsertUpdateAll", func(g *gorm.DB, s modelShape, id int64) error {
					return g.Clauses(clause.OnConflict{UpdateAll: true}).Create(s.new(id, 777)).Error
				}},
				{"Restore", func(g *gorm.DB, s modelShape, id int64) error {
					return g.Unscoped().Model(s.zero(id)).Update("deleted_at", nil).Error
				}},
				{"FirstOrCreate", func(g *gorm.DB, s modelShape, id int64) error {
					return g.Where("id = ?", id).Attrs(map[string]any{"balance": 777}).FirstOrCreate(s.zero(id)).Error
				}},
				{"UnscopedUpdates", func(g *gorm.DB, s modelShape, id int64) error {
					return g.Unscoped().Model(s.zero(id)).Updates(map[string]any{"balance": 777}).Error
				}},
			}
			var calls []ormCall
			modes := []struct {
				name string
				gdb  *gorm.DB
			}{{"tx", openGORM(t, e, false)}, {"autocommit", openGORM(t, e, true)}}
			for i, gc := range gormCalls {
				mode, s := modes[i%len(modes)], gormShapes[i%len(gormShapes)]
				calls = append(calls, ormCall{"GORM/" + mode.name + "/" + gc.name + "/" + s.name, func(ctx context.Context, id int64) error {
					return gc.run(mode.gdb.WithContext(ctx), s, id)
				}})
			}
			bunCalls := []ormCall{
				{"UpsertAll", func(ctx context.Context, id int64) error {
					return bunExec(ctx, bdb.NewInsert().Model(bunShapes[0].new(id, 777)).On(bunOnConflict(b)))
				}},
				{"UpdateModelWithDeleted", func(ctx context.Context, id int64) error {
					return bunExec(ctx, bdb.NewUpdate().Model(bunShapes[1].new(id, 777)).WherePK().WhereAllWithDeleted())
				}},
				{"RestoreSet", func(ctx context.Context, id int64) error {
					return bunExec(ctx, bdb.NewUpdate().Model(bunShapes[2].zero(id)).Set("deleted_at = NULL").WherePK().WhereAllWithDeleted())
				}},
				{"RunInTxUpsert", func(ctx context.Context, id int64) error {
					return bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
						return bunExec(ctx, tx.NewInsert().Model(bunShapes[1].new(id, 777)).On(bunOnConflict(b)))
					})
				}},
			}
			if !b.my() { // Bulk() is a multi-table UPDATE on MySQL: a documented refusal
				bunCalls = append(bunCalls, ormCall{"BulkWithDeleted", func(ctx context.Context, id int64) error {
					return bunExec(ctx, bdb.NewUpdate().Model(bunShapes[0].slice(id)).Column("balance", "deleted_at").Bulk().WhereAllWithDeleted())
				}})
			}
			for _, c := range bunCalls {
				c.name = "Bun/" + c.name
				calls = append(calls, c)
			}
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					e.enter(t)
					id := newID()
					e.seed(t, id, tokOld)
					ctx := testCtx(t)
					if _, err := e.db.ExecContext(fencedsql.WithToken(ctx, tokNewer),
						"UPDATE accounts SET deleted_at = CURRENT_TIMESTAMP WHERE id = "+b.ph(1), id); err != nil {
						t.Fatalf("newer holder's soft delete with token %d: %v", tokNewer, err)
					}
					before := e.row(t, id)
					if !before.Deleted || before.Token != int64(tokNewer) {
						t.Fatalf("after the soft delete with token %d the row is %v", tokNewer, before)
					}
					err := c.run(fencedsql.WithToken(ctx, tokMine), id)
					if after := e.row(t, id); after != before {
						t.Errorf("token %d changed a row soft-deleted by token %d (err %v):\n before %v\n after  %v", tokMine, tokNewer, err, before, after)
					}
					if err != nil && !typedRefusal(err) {
						t.Errorf("refusal is not one of the wrapper's typed errors: %v (%T)", err, err)
					}
				})
			}
		})
	}
}

// typedRefusal: err is one of the wrapper's refusals.
func typedRefusal(err error) bool {
	if _, ok := errors.AsType[*fencedsql.DuplicateError](err); ok {
		return true
	}
	for _, target := range []error{fencedsql.ErrFenced, fencedsql.ErrDuplicate, fencedsql.ErrUnsupported, fencedsql.ErrNoToken, fencedsql.ErrVersionConflict} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
