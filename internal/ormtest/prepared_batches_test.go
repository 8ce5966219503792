package ormtest

import (
	"context"
	"testing"

	"github.com/uptrace/bun"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/ormtest/ent/account"
)

// GORM with PrepareStmt:true (statement cache shared across transactions and
// tokens), CreateInBatches, bun bulk UPDATE over a VALUES CTE.

func openGORMPrepared(t *testing.T, e *env, skipTx bool) *gorm.DB {
	t.Helper()
	return openGORMConfig(t, e, gorm.Config{PrepareStmt: true, SkipDefaultTransaction: skipTx})
}

func preparedExtraOps(e *env, gdb *gorm.DB, bdb *bun.DB, s modelShape, bs modelShape) []op {
	g := func(ctx context.Context) *gorm.DB { return gdb.WithContext(ctx) }
	ops := []op{
		{name: "CreateInBatches", inserts: true, check: wantBatch,
			run: func(ctx context.Context, id int64) error { return g(ctx).CreateInBatches(s.slice(id), 1).Error }},
		{name: "UpsertUpdateAllBatches", existing: true, inserts: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return g(ctx).Clauses(clause.OnConflict{UpdateAll: true}).CreateInBatches(s.new(id, 777), 5).Error
			}},
		{name: "WhereUpdates", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return g(ctx).Model(s.zero(0)).Where("id = ?", id).Updates(map[string]any{"balance": 777}).Error
			}},
		{name: "TableUpdateColumn", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return g(ctx).Table("accounts").Where("id = ?", id).UpdateColumn("balance", 777).Error
			}},
		{name: "ExecRaw", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return g(ctx).Exec("UPDATE accounts SET balance = ? WHERE id = ?", 777, id).Error
			}},
	}
	if e.b.pg() {
		ops = append(ops, op{name: "BunValuesCTEBulkUpdate", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				ms := []*bAccountBare{{ID: id, Owner: "alice", Balance: 777}}
				vals := bdb.NewValues(&ms)
				_, err := bdb.NewUpdate().With("_data", vals).Model((*bAccountBare)(nil)).TableExpr("_data").
					Set("balance = _data.balance").Where("b_account_bare.id = _data.id").Exec(ctx)
				return err
			}},
			op{name: "BunBulkUpdate", existing: true, check: wantBalance(777),
				run: func(ctx context.Context, id int64) error {
					ms := []*bAccountBare{{ID: id, Owner: "alice", Balance: 777}}
					_, err := bdb.NewUpdate().Model(&ms).Column("balance").Bulk().Exec(ctx)
					return err
				}},
		)
	}
	return ops
}

func TestGORMPrepareStmtAndBatches(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			bdb := openBun(e)
			var suites []shapeSuite
			for _, skip := range []bool{false, true} {
				gdb := openGORMPrepared(t, e, skip)
				for _, s := range gormShapes {
					su := gormSuite(e, gdb, s)
					su.ops = append(su.ops, preparedExtraOps(e, gdb, bdb, s, bunShapes[2])...)
					if skip {
						su.shape += "-autocommit"
					}
					su.shape += "-prepared"
					suites = append(suites, su)
				}
			}
			runSuites(t, e, suites)
		})
	}
}

// A prepared statement reused by a lower token after a higher token used it.
func TestPreparedReuseAcrossTokens(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			for _, skip := range []bool{false, true} {
				gdb := openGORMPrepared(t, e, skip)
				id := newID()
				e.seed(t, id, tokOld)
				ctx := testCtx(t)
				if err := gdb.WithContext(fencedsql.WithToken(ctx, tokNewer)).Model(&gAccountBare{ID: id}).Update("balance", 5).Error; err != nil {
					t.Fatalf("newer: %v", err)
				}
				before := e.row(t, id)
				err := gdb.WithContext(fencedsql.WithToken(ctx, tokMine)).Model(&gAccountBare{ID: id}).Update("balance", 6).Error
				wantErr(t, err, fencedsql.ErrFenced)
				wantUnchanged(t, e, id, before)
				// Same through database/sql's own prepared statement across tokens.
				st, perr := e.db.PrepareContext(fencedsql.WithToken(ctx, tokNewer+5), "UPDATE accounts SET balance = "+e.b.ph(1)+" WHERE id = "+e.b.ph(2))
				if perr != nil {
					t.Fatalf("prepare: %v", perr)
				}
				if _, err := st.ExecContext(fencedsql.WithToken(ctx, tokNewer+5), 9, id); err != nil {
					t.Fatalf("exec newer+5: %v", err)
				}
				before = e.row(t, id)
				_, err = st.ExecContext(fencedsql.WithToken(ctx, tokNewer+1), 10, id)
				wantErr(t, err, fencedsql.ErrFenced)
				wantUnchanged(t, e, id, before)
				_, err = st.ExecContext(ctx, 11, id)
				wantErr(t, err, fencedsql.ErrNoToken)
				wantUnchanged(t, e, id, before)
				st.Close()
			}
		})
	}
}

// ent UpdateOneID / DeleteOneID with predicates, bulk update of several rows.
func TestEntPredicatedWrites(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e, c, _ := entSetup(t, b)
			su := shapeSuite{shape: "rw-pred", ops: []op{
				{name: "UpdateOneIDWhere", existing: true, check: wantBalance(1),
					run: func(ctx context.Context, id int64) error {
						return c.Account.UpdateOneID(id).Where(account.BalanceGT(0), account.OwnerEQ("alice")).SetBalance(1).Exec(ctx)
					}},
				{name: "UpdateOneIDWhereSave", existing: true, check: wantBalance(1),
					run: func(ctx context.Context, id int64) error {
						_, err := c.Account.UpdateOneID(id).Where(account.BalanceGTE(0)).SetBalance(1).Save(ctx)
						return err
					}},
				{name: "UpdateWhereIn", existing: true, check: wantBalance(3),
					run: func(ctx context.Context, id int64) error {
						return c.Account.Update().Where(account.IDIn(id, id+5)).AddBalance(-97).Exec(ctx)
					}},
				{name: "DeleteOneIDWhere", existing: true, deletes: true,
					run: func(ctx context.Context, id int64) error {
						return c.Account.DeleteOneID(id).Where(account.BalanceGT(0)).Exec(ctx)
					}},
			},
				forUpdate: entSuite(c).forUpdate,
				write: func(ctx context.Context, id int64) error {
					return c.Account.UpdateOneID(id).Where(account.BalanceGT(-1)).SetBalance(1).Exec(ctx)
				},
			}
			runSuites(t, e, []shapeSuite{su})
		})
	}
}
