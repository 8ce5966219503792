package ormtest

import (
	"errors"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// hintModifier is what gorm.io/hints' hints.New(content) is: a StatementModifier that puts
// "/*+ content */" right after the SELECT, INSERT, UPDATE or DELETE keyword (GORM's
// AfterNameExpression), MySQL's place for optimizer hints. gorm.io/hints is not a
// dependency of this module, so its two methods are copied here.
type hintModifier struct{ content string }

func (h hintModifier) ModifyStatement(stmt *gorm.Statement) {
	for _, name := range []string{"SELECT", "INSERT", "UPDATE", "DELETE"} {
		c := stmt.Clauses[name]
		c.AfterNameExpression = h
		stmt.Clauses[name] = c
	}
}

func (h hintModifier) Build(b clause.Builder) { b.WriteString("/*+ " + h.content + " */") }

// TestOptimizerHintInPlainReadPasses (red-team rt31g F1, an over-refusal): a plain read of a guarded table
// (no token, no lock) carrying a MySQL optimizer hint whose body names the guarded
// table, or holds the letters "merge" (MySQL's INDEX, NO_INDEX_MERGE, NO_MERGE hints,
// written by gorm.io/hints' hints.New), is refused with ErrUnsupported: "an executable
// comment (/*! … */) that may hold a write or name a guarded table"
// (plan.checkExecComments treats a /*+ … */ hint like /*! … */). A hint is never
// statement text (docs/design.md: "/*+ */ hints are blanks"; MariaDB ignores it, MySQL
// hands it to the hint parser), so the read writes nothing and names nothing the server
// runs. Right behaviour: the read passes as it does on the plain driver, and returns the
// same row. Control: a hint that names no guarded table (MAX_EXECUTION_TIME) passes.
func TestOptimizerHintInPlainReadPasses(t *testing.T) {
	b := backendNamed("mysql")
	e := setup(t, b)
	gdb := openGORM(t, e, false)
	id := newID()
	e.seed(t, id, tokOld)
	for _, hint := range []string{
		"MAX_EXECUTION_TIME(1000)", // control: passes today
		"INDEX(accounts PRIMARY)",
		"NO_INDEX_MERGE(accounts)",
		"NO_RANGE_OPTIMIZATION(accounts PRIMARY)",
	} {
		t.Run(hint, func(t *testing.T) {
			e.enter(t)
			var rows []gAccountRW
			err := gdb.WithContext(testCtx(t)).Clauses(hintModifier{hint}).Where("id = ?", id).Find(&rows).Error
			if err != nil {
				t.Fatalf("plain read with the optimizer hint /*+ %s */: %v (%T); want it to pass as on the plain driver (a hint is never run)", hint, err, err)
			}
			if len(rows) != 1 || rows[0].ID != id {
				t.Errorf("read returned %+v, want row %d", rows, id)
			}
		})
	}
}

// TestOptimizerHintInFencedWriteIsFenced (red-team rt31g F1, an over-refusal): every fenced write and
// claim on MySQL/MariaDB that carries an optimizer hint is refused with ErrUnsupported,
// whatever the hint says — GORM with gorm.io/hints puts the hint after UPDATE, DELETE,
// INSERT and SELECT alike. The reasons given are wrong too: "an UPDATE of a shape the
// rewriter does not know" (with no table), "a multi-table DELETE" for a single-table
// DELETE, "an executable comment (/*! … */)" for a /*+ … */ hint. MariaDB ignores the
// hint; MySQL reads it as a hint, never as statement text. Right behaviour: a hint
// other than SET_VAR is a blank to the rewriter (the design's "/*+ */ hints are
// blanks"): the write is fenced as without it (a newer token lands and stamps, an older
// one gets ErrFenced with the row unchanged). SET_VAR (MySQL 8: /*+ SET_VAR(sql_mode="")
// */ would turn the fence's NOT NULL violation into a warning) must stay refused in a
// write; the test checks that it is.
func TestOptimizerHintInFencedWriteIsFenced(t *testing.T) {
	b := backendNamed("mysql")
	e := setup(t, b)
	gdb := openGORM(t, e, false)
	h := hintModifier{"BNL()"}
	type write struct {
		name    string
		run     func(g *gorm.DB, id int64) error
		deletes bool
		inserts bool
	}
	writes := []write{
		{name: "Update", run: func(g *gorm.DB, id int64) error {
			return g.Clauses(h).Model(&gAccountRW{ID: id}).Update("balance", 7).Error
		}},
		{name: "HardDelete", deletes: true, run: func(g *gorm.DB, id int64) error {
			return g.Clauses(h).Unscoped().Delete(&gAccountRW{ID: id}).Error
		}},
		{name: "Upsert", run: func(g *gorm.DB, id int64) error {
			return g.Clauses(h, clause.OnConflict{UpdateAll: true}).Create(&gAccountRW{ID: id, Balance: 7}).Error
		}},
		{name: "Claim", run: func(g *gorm.DB, id int64) error {
			return g.Transaction(func(tx *gorm.DB) error {
				var m gAccountRW
				return tx.Clauses(h, clause.Locking{Strength: "UPDATE"}).Where("id = ?", id).First(&m).Error
			})
		}},
	}
	for _, w := range writes {
		t.Run(w.name+"/Fresh", func(t *testing.T) {
			e.enter(t)
			id := newID()
			before := e.seed(t, id, tokOld)
			err := w.run(gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)), id)
			if err != nil {
				t.Fatalf("token %d on a row of token %d with the hint /*+ BNL() */: %v (%T); want it fenced as without the hint", tokMine, tokOld, err, err)
			}
			after := e.row(t, id)
			switch {
			case w.deletes && after.Exists:
				t.Errorf("row %d still there after the delete: %v", id, after)
			case !w.deletes && (after.Token != int64(tokMine) || after.Version <= before.Version):
				t.Errorf("row %d after token %d: %v, want it stamped", id, tokMine, after)
			}
		})
		t.Run(w.name+"/Stale", func(t *testing.T) {
			e.enter(t)
			id := newID()
			before := e.seed(t, id, tokNewer)
			err := w.run(gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)), id)
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("older token %d with the hint: %v (%T), want ErrFenced as without the hint", tokMine, err, err)
			}
			wantUnchanged(t, e, id, before)
		})
	}
	t.Run("SetVarStaysRefused", func(t *testing.T) {
		e.enter(t)
		id := newID()
		before := e.seed(t, id, tokNewer)
		err := gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)).Clauses(hintModifier{"SET_VAR(sql_mode='')"}).
			Model(&gAccountRW{ID: id}).Update("balance", 7).Error
		if !errors.Is(err, fencedsql.ErrUnsupported) && !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("a write carrying SET_VAR(sql_mode=''): %v, want ErrUnsupported (or ErrFenced)", err)
		}
		wantUnchanged(t, e, id, before)
	})
}
