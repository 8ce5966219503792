package ormtest

import (
	"errors"
	"slices"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestDeleteReturningOneStatement: DELETE … RETURNING outside a transaction (GORM with
// SkipDefaultTransaction, bun without RunInTx) runs where the wrapper sends the DELETE
// as one atomic statement (PostgreSQL, MariaDB with the guard installed): the caller
// gets exactly its RETURNING columns, the deleted rows' stored values (not a fencing
// stamp), and an older token is refused with nothing deleted. Where the DELETE is two
// statements (SQLite), it stays refused outside a transaction: the fencing UPDATE and
// the DELETE must commit together.
func TestDeleteReturningOneStatement(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			gdb := openGORM(t, e, false).Session(&gorm.Session{SkipDefaultTransaction: true})
			t.Run("GORMReturningNoTx", func(t *testing.T) {
				e.enter(t)
				id := newID()
				before := e.seed(t, id, tokOld)
				var got []gAccountRW
				r := gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)).Unscoped().Clauses(clause.Returning{}).
					Where("id = ?", id).Delete(&got)
				if b.lite() {
					if !errors.Is(r.Error, fencedsql.ErrUnsupported) {
						t.Errorf("two-statement DELETE … RETURNING outside a transaction: %v, want ErrUnsupported", r.Error)
					}
					wantUnchanged(t, e, id, before)
					return
				}
				if r.Error != nil {
					t.Fatalf("one-statement DELETE … RETURNING outside a transaction: %v", r.Error)
				}
				if len(got) != 1 || got[0].ID != id || got[0].Balance != 100 || got[0].FenceToken != before.Token || got[0].Version != before.Version {
					t.Errorf("returned %+v, want the stored row %v", got, before)
				}
				if after := e.row(t, id); after.Exists {
					t.Errorf("row still there: %v", after)
				}
			})
			if b.lite() {
				return
			}
			t.Run("Columns", func(t *testing.T) {
				e.enter(t)
				id := newID()
				e.seed(t, id, tokOld)
				rows, err := e.db.QueryContext(fencedsql.WithToken(testCtx(t), tokMine),
					"DELETE FROM accounts WHERE id = "+b.ph(1)+" RETURNING balance, fence_token", id)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				cols, _ := rows.Columns()
				if !slices.Equal(cols, []string{"balance", "fence_token"}) {
					t.Errorf("columns %v, want the caller's [balance fence_token]", cols)
				}
				var n int
				for rows.Next() {
					var bal, tok int64
					if err := rows.Scan(&bal, &tok); err != nil {
						t.Fatal(err)
					}
					if bal != 100 || tok != int64(tokOld) {
						t.Errorf("returned balance %d token %d, want the stored 100, %d", bal, tok, tokOld)
					}
					n++
				}
				if err := rows.Err(); err != nil || n != 1 {
					t.Errorf("%d rows, err %v; want 1 row", n, err)
				}
			})
			t.Run("StaleToken", func(t *testing.T) {
				e.enter(t)
				id := newID()
				before := e.seed(t, id, tokNewer)
				var got []gAccountRW
				r := gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)).Unscoped().Clauses(clause.Returning{}).
					Where("id = ?", id).Delete(&got)
				if !errors.Is(r.Error, fencedsql.ErrFenced) {
					t.Errorf("stale DELETE … RETURNING: %v (returned %v), want ErrFenced", r.Error, got)
				}
				wantUnchanged(t, e, id, before)
			})
		})
	}
}
