package ormtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// The most ordinary ORM model: an auto-increment key (gorm.Model, bun's autoincrement),
// timestamps, soft delete. The ORMs take new keys from RETURNING (PostgreSQL, SQLite)
// or LastInsertId (MySQL/MariaDB, for a batch the first key).

type gItem struct {
	gorm.Model
	Name string
	Qty  int64
}

func (gItem) TableName() string { return "items" }

type bItem struct {
	bun.BaseModel `bun:"table:items"`
	ID            int64     `bun:"id,pk,autoincrement"`
	CreatedAt     time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
	UpdatedAt     time.Time `bun:"updated_at,nullzero,notnull,default:current_timestamp"`
	DeletedAt     time.Time `bun:"deleted_at,soft_delete,nullzero"`
	Name          string    `bun:"name"`
	Qty           int64     `bun:"qty"`
}

var itemsDDL = map[string]string{
	"postgres": `CREATE TABLE items (id BIGSERIAL PRIMARY KEY, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, deleted_at TIMESTAMPTZ,
		name TEXT, qty BIGINT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
	"mysql": `CREATE TABLE items (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, created_at DATETIME(3) NULL, updated_at DATETIME(3) NULL,
		deleted_at DATETIME(3) NULL, name VARCHAR(100), qty BIGINT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`,
	"sqlite": `CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at DATETIME, updated_at DATETIME, deleted_at DATETIME,
		name TEXT, qty INTEGER, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)`,
}

// TestAutoIncrementKeys (red-team rt53c): the keys GORM and bun give the models of new
// rows of an auto-increment table through the wrapper — GORM Create, batch Create,
// batch upsert and Save of a new record (default transaction and
// SkipDefaultTransaction), bun Insert and batch Insert — are the rows' keys, and the
// rows carry the caller's token.
func TestAutoIncrementKeys(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setupTables(t, b, []string{"items"}, itemsDDL[b.name])
			bdb := openBun(e)
			n := 0
			name := func() string { n++; return fmt.Sprintf("item%d", n) }
			// Advance the key so that keys and counts differ.
			first := []gItem{{Name: name()}, {Name: name()}, {Name: name()}}
			if err := openGORM(t, e, false).WithContext(fencedsql.WithToken(testCtx(t), tokOld)).Create(&first).Error; err != nil {
				t.Fatal(err)
			}
			type item struct {
				key  int64
				name string
			}
			type itemCall struct {
				name string
				run  func(ctx context.Context) ([]item, error)
			}
			calls := []itemCall{
				{"Bun/Insert", func(ctx context.Context) ([]item, error) {
					m := bItem{Name: name()}
					_, err := bdb.NewInsert().Model(&m).Exec(ctx)
					return []item{{m.ID, m.Name}}, err
				}},
				{"Bun/InsertBatch", func(ctx context.Context) ([]item, error) {
					ms := []bItem{{Name: name()}, {Name: name()}}
					_, err := bdb.NewInsert().Model(&ms).Exec(ctx)
					return []item{{ms[0].ID, ms[0].Name}, {ms[1].ID, ms[1].Name}}, err
				}},
			}
			gItems := func(ms []gItem) []item {
				var its []item
				for _, m := range ms {
					its = append(its, item{int64(m.ID), m.Name})
				}
				return its
			}
			for _, mode := range []struct {
				name string
				gdb  *gorm.DB
			}{{"tx", openGORM(t, e, false)}, {"autocommit", openGORM(t, e, true)}} {
				g := func(ctx context.Context) *gorm.DB { return mode.gdb.WithContext(ctx) }
				pre := "GORM/" + mode.name + "/"
				calls = append(calls, []itemCall{
					{pre + "Create", func(ctx context.Context) ([]item, error) {
						ms := []gItem{{Name: name()}}
						err := g(ctx).Create(&ms[0]).Error
						return gItems(ms), err
					}},
					{pre + "CreateBatch", func(ctx context.Context) ([]item, error) {
						ms := []gItem{{Name: name()}, {Name: name()}, {Name: name()}}
						err := g(ctx).Create(&ms).Error
						return gItems(ms), err
					}},
					{pre + "UpsertBatch", func(ctx context.Context) ([]item, error) {
						ms := []gItem{{Name: name()}, {Name: name()}}
						err := g(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&ms).Error
						return gItems(ms), err
					}},
					{pre + "SaveNew", func(ctx context.Context) ([]item, error) {
						ms := []gItem{{Name: name()}}
						err := g(ctx).Save(&ms[0]).Error
						return gItems(ms), err
					}},
				}...)
			}
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					e.enter(t)
					items, err := c.run(fencedsql.WithToken(testCtx(t), tokMine))
					if err != nil {
						t.Fatalf("with token %d: %v", tokMine, err)
					}
					for _, it := range items {
						var key, tok int64
						if err := e.raw.QueryRow("SELECT id, fence_token FROM items WHERE name = "+b.ph(1), it.name).Scan(&key, &tok); err != nil {
							t.Fatalf("plain read of item %q: %v", it.name, err)
						}
						if it.key != key || tok != int64(tokMine) {
							t.Errorf("item %q: the model got key %d; the row has key %d and fence_token %d (want %d)", it.name, it.key, key, tok, tokMine)
						}
					}
				})
			}
		})
	}
}
