package ormtest

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// A has-many association between two guarded tables: accounts and orders.

type gOrder struct {
	ID        int64 `gorm:"primaryKey;autoIncrement:false"`
	AccountID *int64
	Amount    int64
}

func (gOrder) TableName() string { return "orders" }

type gAccountOrders struct {
	ID        int64 `gorm:"primaryKey;autoIncrement:false"`
	Owner     string
	Balance   int64
	DeletedAt gorm.DeletedAt
	Orders    []gOrder `gorm:"foreignKey:AccountID"`
}

func (gAccountOrders) TableName() string { return "accounts" }

const ordersDDL = `CREATE TABLE orders (id BIGINT PRIMARY KEY, account_id BIGINT NULL, amount BIGINT,
	fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`

// exec runs q through the fenced pool with tok.
func (e *env) exec(t *testing.T, tok uint64, q string, args ...any) {
	t.Helper()
	if _, err := e.db.ExecContext(fencedsql.WithToken(testCtx(t), tok), q, args...); err != nil {
		t.Fatalf("%s %v with token %d: %v", q, args, tok, err)
	}
}

// seedOrders writes, with tok, account id, its order id+1 and a free order id+2.
func seedOrders(t *testing.T, e *env, id int64, tok uint64) {
	t.Helper()
	ph := e.b.ph
	e.exec(t, tok, fmt.Sprintf("INSERT INTO accounts (id, owner, balance) VALUES (%s, %s, %s)", ph(1), ph(2), ph(3)), id, "alice", 100)
	e.exec(t, tok, fmt.Sprintf("INSERT INTO orders (id, account_id, amount) VALUES (%s, %s, %s)", ph(1), ph(2), ph(3)), id+1, id, 1)
	e.exec(t, tok, fmt.Sprintf("INSERT INTO orders (id, account_id, amount) VALUES (%s, NULL, %s)", ph(1), ph(2)), id+2, 2)
}

// ordersSnap is account id, account id+5 (one a call may create) and orders id+1,
// id+2 as the plain connection sees them; gone counts the orders that are not there.
func ordersSnap(t *testing.T, e *env, id int64) (snap string, gone int) {
	t.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "account %d %v; account %d %v;", id, e.row(t, id), id+5, e.row(t, id+5))
	for _, o := range []int64{id + 1, id + 2} {
		var acc sql.NullInt64
		var amount, tok, ver int64
		err := e.raw.QueryRow("SELECT account_id, amount, fence_token, version FROM orders WHERE id = "+e.b.ph(1), o).Scan(&acc, &amount, &tok, &ver)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			fmt.Fprintf(&sb, " order %d <no row>;", o)
			gone++
		case err != nil:
			t.Fatalf("plain read of order %d: %v", o, err)
		default:
			fmt.Fprintf(&sb, " order %d {account_id=%v amount=%d fence_token=%d version=%d};", o, acc, amount, tok, ver)
		}
	}
	return sb.String(), gone
}

// TestGORMAssociations (red-team rt53c): GORM's association writes over two guarded
// tables — Create of an account with existing orders (an upsert of the children), Save
// with FullSaveAssociations, Association Append, Replace, Delete and Clear,
// Select("Orders").Delete soft and Unscoped. Over rows of an older token the call
// succeeds; over rows of a newer token it fails with ErrFenced and neither table
// changes; after a newer holder deleted the orders, no call brings one back.
func TestGORMAssociations(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	calls := []struct {
		name string
		run  func(g *gorm.DB, id int64) error
	}{
		{"CreateWithOrders", func(g *gorm.DB, id int64) error {
			return g.Create(&gAccountOrders{ID: id + 5, Owner: "x", Balance: 1, Orders: []gOrder{{ID: id + 1, Amount: 7}, {ID: id + 2, Amount: 7}}}).Error
		}},
		{"SaveFullSaveAssociations", func(g *gorm.DB, id int64) error {
			return g.Session(&gorm.Session{FullSaveAssociations: true}).Save(&gAccountOrders{ID: id, Owner: "x", Balance: 1,
				Orders: []gOrder{{ID: id + 1, Amount: 7}}}).Error
		}},
		{"Append", func(g *gorm.DB, id int64) error {
			return g.Model(&gAccountOrders{ID: id}).Association("Orders").Append(&gOrder{ID: id + 2, Amount: 7})
		}},
		{"Replace", func(g *gorm.DB, id int64) error {
			return g.Model(&gAccountOrders{ID: id}).Association("Orders").Replace(&gOrder{ID: id + 2, Amount: 7})
		}},
		{"Delete", func(g *gorm.DB, id int64) error {
			return g.Model(&gAccountOrders{ID: id}).Association("Orders").Delete(&gOrder{ID: id + 1, AccountID: p(id)})
		}},
		{"Clear", func(g *gorm.DB, id int64) error {
			return g.Model(&gAccountOrders{ID: id}).Association("Orders").Clear()
		}},
		{"SelectOrdersSoftDelete", func(g *gorm.DB, id int64) error {
			return g.Select("Orders").Delete(&gAccountOrders{ID: id}).Error
		}},
		{"SelectOrdersUnscopedDelete", func(g *gorm.DB, id int64) error {
			return g.Unscoped().Select("Orders").Delete(&gAccountOrders{ID: id}).Error
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setupTables(t, b, []string{"accounts", "orders"}, b.ddl, ordersDDL)
			gdb := openGORM(t, e, false)
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					t.Run("Fresh", func(t *testing.T) {
						e.enter(t)
						id := newID()
						seedOrders(t, e, id, tokOld)
						if err := c.run(gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)), id); err != nil {
							t.Errorf("token %d over rows of token %d: %v", tokMine, tokOld, err)
						}
					})
					t.Run("Stale", func(t *testing.T) {
						e.enter(t)
						id := newID()
						seedOrders(t, e, id, tokNewer)
						before, _ := ordersSnap(t, e, id)
						wantErr(t, c.run(gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)), id), fencedsql.ErrFenced)
						if after, _ := ordersSnap(t, e, id); after != before {
							t.Errorf("token %d changed rows of token %d:\n before %s\n after  %s", tokMine, tokNewer, before, after)
						}
					})
					t.Run("NoResurrection", func(t *testing.T) {
						e.enter(t)
						id := newID()
						seedOrders(t, e, id, tokOld)
						e.exec(t, tokNewer, "DELETE FROM orders WHERE id IN ("+b.ph(1)+", "+b.ph(2)+")", id+1, id+2)
						before, _ := ordersSnap(t, e, id)
						err := c.run(gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)), id)
						if after, gone := ordersSnap(t, e, id); gone != 2 {
							t.Errorf("token %d brought back an order token %d deleted (err %v):\n before %s\n after  %s", tokMine, tokNewer, err, before, after)
						}
					})
				})
			}
		})
	}
}
