package ormtest

import (
	"errors"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestConditionOnFencingColumnsOneStatement: a DELETE or a claimed locking read whose
// condition reads a fencing column (gorm.io/plugin/optimisticlock's hard delete: WHERE
// id = ? AND version = ?) or calls a volatile clock (a job reaper's clock_timestamp(),
// SYSDATE()) selects its rows once where the wrapper sends it as one statement —
// PostgreSQL's and MariaDB's DELETE with the guard installed, PostgreSQL's
// one-statement claim — and runs there. Where the wrapper would send two statements
// (SQLite's DELETE, MariaDB's claim, a DELETE without the lazy schema checks), which
// select the rows twice, it is refused with ErrUnsupported before anything is sent.
func TestConditionOnFencingColumnsOneStatement(t *testing.T) {
	clock := map[string]string{"postgres": "clock_timestamp() > '2000-01-01'", "mysql": "SYSDATE() > '2000-01-01'", "sqlite": "random() IS NOT NULL"}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			gdb := openGORM(t, e, false)
			oneDelete := !b.lite()
			deletes := map[string]func(id int64, before dbRow) *gorm.DB{
				"DeleteWhereVersion": func(id int64, before dbRow) *gorm.DB {
					return gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)).Unscoped().
						Where("id = ? AND version = ?", id, before.Version).Delete(&gAccountRW{})
				},
				"DeleteWhereToken": func(id int64, before dbRow) *gorm.DB {
					return gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)).Unscoped().
						Where("id = ? AND fence_token = ?", id, before.Token).Delete(&gAccountRW{})
				},
				"DeleteWhereVolatile": func(id int64, _ dbRow) *gorm.DB {
					return gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)).Unscoped().
						Where("id = ? AND "+clock[b.name], id).Delete(&gAccountRW{})
				},
			}
			for name, del := range deletes {
				t.Run(name, func(t *testing.T) {
					e.enter(t)
					id := newID()
					before := e.seed(t, id, tokOld)
					r := del(id, before)
					if !oneDelete {
						if !errors.Is(r.Error, fencedsql.ErrUnsupported) {
							t.Errorf("two-statement DELETE: %v, want ErrUnsupported", r.Error)
						}
						wantUnchanged(t, e, id, before)
						return
					}
					if r.Error != nil || r.RowsAffected != 1 {
						t.Errorf("one-statement DELETE: rows %d, err %v; want the row deleted", r.RowsAffected, r.Error)
					}
					if got := e.row(t, id); got.Exists {
						t.Errorf("row still there: %v", got)
					}
				})
			}
			if !b.forUpdate() {
				return
			}
			claims := map[string]string{"ClaimWhereToken": "id = ? AND fence_token = ?", "ClaimWhereVolatile": "id = ? AND " + clock[b.name] + " AND ? > 0"}
			for name, cond := range claims {
				t.Run(name, func(t *testing.T) {
					e.enter(t)
					id := newID()
					before := e.seed(t, id, tokOld)
					var got []gAccountRW
					err := gdb.WithContext(fencedsql.WithToken(testCtx(t), tokNewer)).Transaction(func(tx *gorm.DB) error {
						return tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where(cond, id, tokOld).Find(&got).Error
					})
					if b.my() { // MariaDB's claim is two statements
						if !errors.Is(err, fencedsql.ErrUnsupported) {
							t.Errorf("two-statement claim: %v, want ErrUnsupported", err)
						}
						wantUnchanged(t, e, id, before)
						return
					}
					if err != nil || len(got) != 1 || got[0].FenceToken != int64(tokNewer) {
						t.Fatalf("one-statement claim: %v, err %v; want the row claimed", got, err)
					}
					_, err = e.db.ExecContext(fencedsql.WithToken(testCtx(t), tokMine), "UPDATE accounts SET balance = 1 WHERE id = "+b.ph(1), id)
					if !errors.Is(err, fencedsql.ErrFenced) {
						t.Errorf("older holder's write after the claim: %v, want ErrFenced", err)
					}
				})
			}
		})
	}
	// Without the lazy schema checks the wrapper cannot ask whether the guard takes the
	// one-statement DELETE: it sends the two statements, and refuses.
	t.Run("postgres/no_schema_check", func(t *testing.T) {
		b := backendNamed("postgres")
		e := setupWith(t, b, nil, "fenced_schema_check=false")
		id := newID()
		before := e.seed(t, id, tokOld)
		_, err := e.db.ExecContext(fencedsql.WithToken(testCtx(t), tokMine), `DELETE FROM accounts WHERE id = $1 AND version = $2`, id, before.Version)
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("two-statement DELETE … WHERE version = $2: %v, want ErrUnsupported", err)
		}
		wantUnchanged(t, e, id, before)
	})
}
