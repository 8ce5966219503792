package ormtest

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// The three model shapes of the accounts table, GORM flavour.

// gAccountRW maps the fencing columns read-write: GORM writes whatever the struct holds,
// and the wrapper must put its own assignments in their place.
type gAccountRW struct {
	ID         int64 `gorm:"primaryKey;autoIncrement:false"`
	Owner      string
	Balance    int64
	DeletedAt  gorm.DeletedAt
	FenceToken int64
	Version    int64
}

func (gAccountRW) TableName() string { return "accounts" }

// gAccountRO maps them read-only: GORM reads them, never writes them.
type gAccountRO struct {
	ID         int64 `gorm:"primaryKey;autoIncrement:false"`
	Owner      string
	Balance    int64
	DeletedAt  gorm.DeletedAt
	FenceToken int64 `gorm:"->"`
	Version    int64 `gorm:"->"`
}

func (gAccountRO) TableName() string { return "accounts" }

// gAccountBare does not declare them.
type gAccountBare struct {
	ID        int64 `gorm:"primaryKey;autoIncrement:false"`
	Owner     string
	Balance   int64
	DeletedAt gorm.DeletedAt
}

func (gAccountBare) TableName() string { return "accounts" }

// modelShape builds models of one struct type by reflection (GORM and bun share it).
type modelShape struct {
	name string
	typ  reflect.Type
}

// new returns *T{ID: id, Owner: "bob", Balance: bal} with lies in FenceToken/Version.
func (s modelShape) new(id, bal int64) any {
	v := reflect.New(s.typ)
	fill(v.Elem(), id, bal)
	return v.Interface()
}

func fill(e reflect.Value, id, bal int64) {
	e.FieldByName("ID").SetInt(id)
	e.FieldByName("Owner").SetString("bob")
	e.FieldByName("Balance").SetInt(bal)
	if f := e.FieldByName("FenceToken"); f.IsValid() {
		f.SetInt(lieToken)
	}
	if f := e.FieldByName("Version"); f.IsValid() {
		f.SetInt(lieVersion)
	}
}

// zero returns *T{ID: id}.
func (s modelShape) zero(id int64) any {
	v := reflect.New(s.typ)
	v.Elem().FieldByName("ID").SetInt(id)
	return v.Interface()
}

// slice returns *[]T with rows id and id+1, balance 777.
func (s modelShape) slice(id int64) any {
	sl := reflect.MakeSlice(reflect.SliceOf(s.typ), 2, 2)
	fill(sl.Index(0), id, 777)
	fill(sl.Index(1), id+1, 777)
	p := reflect.New(sl.Type())
	p.Elem().Set(sl)
	return p.Interface()
}

func setBalance(m any, bal int64) { reflect.ValueOf(m).Elem().FieldByName("Balance").SetInt(bal) }

// tokenOf is the model's FenceToken field, if it has one.
func tokenOf(m any) (int64, bool) {
	f := reflect.ValueOf(m).Elem().FieldByName("FenceToken")
	if !f.IsValid() {
		return 0, false
	}
	return f.Int(), true
}

// checkReturned turns a wrong RETURNING value into an error of the operation.
func checkReturned(ctx context.Context, m any, err error) error {
	if err != nil {
		return err
	}
	want, _ := fencedsql.TokenFrom(ctx)
	if got, ok := tokenOf(m); ok && got != int64(want) {
		return fmt.Errorf("RETURNING scanned fence_token %d into the model, want %d", got, want)
	}
	return nil
}

var gormShapes = []modelShape{
	{"rw", reflect.TypeFor[gAccountRW]()},
	{"ro", reflect.TypeFor[gAccountRO]()},
	{"bare", reflect.TypeFor[gAccountBare]()},
}

type gormLog struct{ e *env }

func (l gormLog) Printf(format string, args ...any) { l.e.logf(format, args...) }

// openGORM opens GORM the documented way over the fenced pool; with skipTx, with
// SkipDefaultTransaction (GORM's performance setting: Create, Save, Update and Delete
// in autocommit).
func openGORM(t *testing.T, e *env, skipTx bool) *gorm.DB {
	t.Helper()
	return openGORMConfig(t, e, gorm.Config{SkipDefaultTransaction: skipTx})
}

// openGORMConfig is openGORM with the settings of cfg (its Logger is the test's).
func openGORMConfig(t *testing.T, e *env, cfg gorm.Config) *gorm.DB {
	t.Helper()
	var d gorm.Dialector
	switch e.b.name {
	case "postgres":
		d = postgres.New(postgres.Config{Conn: e.db})
	case "mysql":
		d = mysql.New(mysql.Config{Conn: e.db})
	case "sqlite":
		d = sqliteDialector{Conn: e.db}
	}
	cfg.Logger = logger.New(gormLog{e}, logger.Config{LogLevel: logger.Info, IgnoreRecordNotFoundError: true})
	gdb, err := gorm.Open(d, &cfg)
	if err != nil {
		t.Fatalf("gorm.Open: %v", err)
	}
	return gdb
}

// TestGORM runs every GORM operation on every model shape, in GORM's default
// transaction and, as the shapes' "-autocommit" rows, with SkipDefaultTransaction: the
// statements then run outside any transaction, where the wrapper adds the outcome to
// its errors (red-team rt43d F2).
func TestGORM(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			gdb, auto := openGORM(t, e, false), openGORM(t, e, true)
			var suites []shapeSuite
			for _, s := range gormShapes {
				suites = append(suites, gormSuite(e, gdb, s))
			}
			for _, s := range gormShapes {
				a := gormSuite(e, auto, s)
				a.shape += "-autocommit"
				suites = append(suites, a)
			}
			runSuites(t, e, suites)
		})
	}
}

func gormSuite(e *env, gdb *gorm.DB, s modelShape) shapeSuite {
	g := func(ctx context.Context) *gorm.DB { return gdb.WithContext(ctx) }
	noReturning := ""
	if !e.b.returning() {
		noReturning = "MariaDB/MySQL has no UPDATE … RETURNING"
	}
	ops := []op{
		{name: "Create", inserts: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error { return g(ctx).Create(s.new(id, 777)).Error }},
		{name: "CreateBatch", inserts: true, check: wantBatch,
			run: func(ctx context.Context, id int64) error { return g(ctx).Create(s.slice(id)).Error }},
		{name: "Save", existing: true, inserts: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error { return g(ctx).Save(s.new(id, 777)).Error }},
		{name: "UpdatesMap", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return g(ctx).Model(s.zero(id)).Updates(map[string]any{"owner": "bob", "balance": 777}).Error
			}},
		{name: "UpdatesStruct", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return g(ctx).Model(s.zero(id)).Updates(s.new(id, 777)).Error
			}},
		{name: "Update", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return g(ctx).Model(s.zero(id)).Update("balance", 777).Error
			}},
		{name: "UpdateExpr", existing: true, check: wantIncrement(5),
			run: func(ctx context.Context, id int64) error {
				return g(ctx).Model(s.zero(id)).Update("balance", gorm.Expr("balance + ?", 5)).Error
			}},
		{name: "SoftDelete", existing: true, check: wantSoftDeleted,
			run: func(ctx context.Context, id int64) error { return g(ctx).Delete(s.zero(id)).Error }},
		{name: "HardDelete", existing: true, deletes: true,
			run: func(ctx context.Context, id int64) error { return g(ctx).Unscoped().Delete(s.zero(id)).Error }},
		{name: "UpsertUpdateAll", existing: true, inserts: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return g(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(s.new(id, 777)).Error
			}},
		{name: "UpsertDoUpdates", existing: true, inserts: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return g(ctx).Clauses(clause.OnConflict{
					Columns:   []clause.Column{{Name: "id"}},
					DoUpdates: clause.AssignmentColumns([]string{"owner", "balance"}),
				}).Create(s.new(id, 777)).Error
			}},
		{name: "UpdateReturning", existing: true, skip: noReturning, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				m := s.zero(id)
				err := g(ctx).Model(m).Clauses(clause.Returning{}).Updates(map[string]any{"balance": 777}).Error
				return checkReturned(ctx, m, err)
			}},
	}
	return shapeSuite{
		shape: s.name,
		ops:   ops,
		forUpdate: func(ctx context.Context, id int64, save bool) error {
			return g(ctx).Transaction(func(tx *gorm.DB) error {
				m := s.zero(id)
				if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).First(m).Error; err != nil {
					return err
				}
				if !save {
					return nil
				}
				setBalance(m, 888)
				return tx.Save(m).Error
			})
		},
		write: func(ctx context.Context, id int64) error {
			return g(ctx).Model(s.zero(id)).Update("balance", 1).Error
		},
	}
}
