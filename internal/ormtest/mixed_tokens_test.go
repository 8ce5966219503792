package ormtest

import (
	"context"
	"testing"

	"github.com/uptrace/bun"
	"gorm.io/gorm/clause"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestMixedTokensAllOrNothing (G2; red-team rt53c): one ORM call over two rows, one
// written by an older token and one by a newer — GORM batch upserts (default transaction
// and SkipDefaultTransaction), CreateInBatches of one row per statement, IN-list update,
// hard and soft delete; bun batch upsert, Bulk() update, ForceDelete of an IN list — is
// refused with ErrFenced and changes neither row, whichever row comes first.
func TestMixedTokensAllOrNothing(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			gdb, auto := openGORM(t, e, false), openGORM(t, e, true)
			bdb := openBun(e)
			in := func(id int64) []int64 { return []int64{id, id + 1} }
			calls := []ormCall{
				{"GORMUpsertBatch", func(ctx context.Context, id int64) error {
					return gdb.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(gormShapes[1].slice(id)).Error
				}},
				{"GORMUpsertBatchAutocommit", func(ctx context.Context, id int64) error {
					return auto.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(gormShapes[2].slice(id)).Error
				}},
				{"GORMCreateInBatches1", func(ctx context.Context, id int64) error {
					return gdb.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).CreateInBatches(gormShapes[0].slice(id), 1).Error
				}},
				{"GORMUpdateInAutocommit", func(ctx context.Context, id int64) error {
					return auto.WithContext(ctx).Model(&gAccountRO{}).Where("id IN ?", in(id)).Update("balance", 777).Error
				}},
				{"GORMHardDeleteInAutocommit", func(ctx context.Context, id int64) error {
					return auto.WithContext(ctx).Unscoped().Where("id IN ?", in(id)).Delete(&gAccountRO{}).Error
				}},
				{"GORMSoftDeleteIn", func(ctx context.Context, id int64) error {
					return gdb.WithContext(ctx).Where("id IN ?", in(id)).Delete(&gAccountBare{}).Error
				}},
				{"BunUpsertBatch", func(ctx context.Context, id int64) error {
					return bunExec(ctx, bdb.NewInsert().Model(bunShapes[0].slice(id)).On(bunOnConflict(b)))
				}},
				{"BunForceDeleteIn", func(ctx context.Context, id int64) error {
					return bunExec(ctx, bdb.NewDelete().Model((*bAccountBare)(nil)).Where("id IN (?)", bun.In(in(id))).ForceDelete())
				}},
			}
			if !b.my() { // Bulk() is a multi-table UPDATE on MySQL: a documented refusal
				calls = append(calls, ormCall{"BunBulkUpdate", func(ctx context.Context, id int64) error {
					return bunExec(ctx, bdb.NewUpdate().Model(bunShapes[1].slice(id)).Column("balance").Bulk())
				}})
			}
			for _, c := range calls {
				for _, order := range []struct {
					name          string
					first, second uint64
				}{{"OlderFirst", tokOld, tokNewer}, {"NewerFirst", tokNewer, tokOld}} {
					t.Run(c.name+"/"+order.name, func(t *testing.T) {
						e.enter(t)
						id := newID()
						b1, b2 := e.seed(t, id, order.first), e.seed(t, id+1, order.second)
						wantErr(t, c.run(fencedsql.WithToken(testCtx(t), tokMine), id), fencedsql.ErrFenced)
						wantUnchanged(t, e, id, b1)
						wantUnchanged(t, e, id+1, b2)
					})
				}
			}
		})
	}
}
