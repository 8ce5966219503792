package ormtest

import (
	"errors"
	"testing"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// GORM's TranslateError through the fenced driver (red-team pass rt10o, F1): a unique
// violation is a *fencedsql.DuplicateError, which GORM's dialectors cannot type-assert to
// their driver's error. On PostgreSQL its Code field carries the SQLSTATE that GORM's
// fallback reads, so gorm.ErrDuplicatedKey holds as with the plain driver, on guarded
// and unguarded tables. GORM's MySQL dialector knows only *mysql.MySQLError: there the
// error keeps fencedsql.ErrDuplicate (README, "GORM"), which is what to test for.
func TestGORMTranslateDuplicate(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			parents := "CREATE TABLE parents (id BIGINT PRIMARY KEY)"
			if b.my() {
				parents += " ENGINE=InnoDB"
			}
			if _, err := e.raw.ExecContext(testCtx(t), parents); err != nil {
				t.Fatal(err)
			}
			open := func() *gorm.DB {
				d := gorm.Dialector(postgres.New(postgres.Config{Conn: e.db}))
				if b.my() {
					d = mysql.New(mysql.Config{Conn: e.db})
				}
				g, err := gorm.Open(d, &gorm.Config{TranslateError: true, Logger: logger.New(gormLog{e}, logger.Config{LogLevel: logger.Info})})
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			g := open()
			ctx := fencedsql.WithToken(testCtx(t), 50)
			id := newID()
			e.seed(t, id, 10)
			type parent struct{ ID int64 }
			if err := g.WithContext(ctx).Table("parents").Create(&parent{ID: 7}).Error; err != nil {
				t.Fatal(err)
			}
			for name, run := range map[string]func() error{
				"guarded":   func() error { return g.WithContext(ctx).Create(&gAccountBare{ID: id, Balance: 1}).Error },
				"unguarded": func() error { return g.WithContext(ctx).Table("parents").Create(&parent{ID: 7}).Error },
			} {
				e.enter(t)
				err := run()
				want := gorm.ErrDuplicatedKey
				if b.my() {
					want = fencedsql.ErrDuplicate
				}
				if !errors.Is(err, want) {
					t.Errorf("%s table: %v (%T), want errors.Is(err, %v)", name, err, err, want)
				}
			}
		})
	}
}
