package ormtest

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/schema"
)

// The three model shapes of the accounts table, bun flavour. DeletedAt is bun's
// soft_delete column: NewDelete sets it, ForceDelete deletes.

type bAccountRW struct {
	bun.BaseModel `bun:"table:accounts"`
	ID            int64     `bun:"id,pk"`
	Owner         string    `bun:"owner"`
	Balance       int64     `bun:"balance"`
	DeletedAt     time.Time `bun:"deleted_at,soft_delete,nullzero"`
	FenceToken    int64     `bun:"fence_token"`
	Version       int64     `bun:"version"`
}

type bAccountRO struct {
	bun.BaseModel `bun:"table:accounts"`
	ID            int64     `bun:"id,pk"`
	Owner         string    `bun:"owner"`
	Balance       int64     `bun:"balance"`
	DeletedAt     time.Time `bun:"deleted_at,soft_delete,nullzero"`
	FenceToken    int64     `bun:"fence_token,scanonly"`
	Version       int64     `bun:"version,scanonly"`
}

type bAccountBare struct {
	bun.BaseModel `bun:"table:accounts"`
	ID            int64     `bun:"id,pk"`
	Owner         string    `bun:"owner"`
	Balance       int64     `bun:"balance"`
	DeletedAt     time.Time `bun:"deleted_at,soft_delete,nullzero"`
}

var bunShapes = []modelShape{
	{"rw", reflect.TypeFor[bAccountRW]()},
	{"ro", reflect.TypeFor[bAccountRO]()},
	{"bare", reflect.TypeFor[bAccountBare]()},
}

// bunLog logs every query bun sends to the running subtest.
type bunLog struct{ e *env }

func (bunLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (l bunLog) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	if ev.Err != nil && ev.Err != sql.ErrNoRows {
		l.e.logf("bun: %s\n    -> %v", ev.Query, ev.Err)
	} else {
		l.e.logf("bun: %s", ev.Query)
	}
}

// openBun opens bun the documented way over the fenced pool.
func openBun(e *env) *bun.DB {
	var d schema.Dialect
	switch e.b.name {
	case "postgres":
		d = pgdialect.New()
	case "mysql":
		d = mysqldialect.New()
	case "sqlite":
		d = sqlitedialect.New()
	}
	bdb := bun.NewDB(e.db, d)
	bdb.AddQueryHook(bunLog{e})
	return bdb
}

func TestBun(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			bdb := openBun(e)
			var suites []shapeSuite
			for _, s := range bunShapes {
				suites = append(suites, bunSuite(e, bdb, s))
			}
			runSuites(t, e, suites)
		})
	}
}

// bunExec runs a bun query for its error.
func bunExec(ctx context.Context, q interface {
	Exec(context.Context, ...any) (sql.Result, error)
}) error {
	_, err := q.Exec(ctx)
	return err
}

// bunOnConflict is bun's upsert clause on id: ON CONFLICT (PostgreSQL, SQLite) or ON
// DUPLICATE KEY (MySQL).
func bunOnConflict(b backend) string {
	if b.my() {
		return "DUPLICATE KEY UPDATE"
	}
	return "CONFLICT (id) DO UPDATE"
}

func bunSuite(e *env, bdb *bun.DB, s modelShape) shapeSuite {
	noReturning := ""
	if !e.b.returning() {
		noReturning = "MariaDB/MySQL has no UPDATE … RETURNING"
	}
	onConflict, excluded := bunOnConflict(e.b), "balance = EXCLUDED.balance"
	if e.b.my() {
		excluded = "balance = VALUES(balance)"
	}
	ops := []op{
		{name: "Insert", inserts: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewInsert().Model(s.new(id, 777)))
			}},
		{name: "InsertBatch", inserts: true, check: wantBatch,
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewInsert().Model(s.slice(id)))
			}},
		{name: "UpdateModel", existing: true, check: wantBalance(777), // bun's "save": every column by PK
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewUpdate().Model(s.new(id, 777)).WherePK())
			}},
		{name: "UpdateMap", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewUpdate().Model(&map[string]any{"owner": "bob", "balance": 777}).
					TableExpr("accounts").Where("id = ?", id))
			}},
		{name: "UpdateColumns", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewUpdate().Model(s.new(id, 777)).Column("owner", "balance").WherePK())
			}},
		{name: "UpdateSet", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewUpdate().Model(s.zero(id)).Set("balance = ?", 777).WherePK())
			}},
		{name: "UpdateExpr", existing: true, check: wantIncrement(5),
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewUpdate().Model(s.zero(id)).Set("balance = balance + ?", 5).WherePK())
			}},
		{name: "SoftDelete", existing: true, check: wantSoftDeleted,
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewDelete().Model(s.zero(id)).WherePK())
			}},
		{name: "ForceDelete", existing: true, deletes: true,
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewDelete().Model(s.zero(id)).WherePK().ForceDelete())
			}},
		{name: "UpsertAll", existing: true, inserts: true, check: wantBalance(777), // bun writes SET for every column
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewInsert().Model(s.new(id, 777)).On(onConflict))
			}},
		{name: "UpsertSet", existing: true, inserts: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return bunExec(ctx, bdb.NewInsert().Model(s.new(id, 777)).On(onConflict).Set(excluded))
			}},
		{name: "UpdateReturning", existing: true, skip: noReturning, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				m := s.zero(id)
				cols := "*"
				if _, ok := tokenOf(m); !ok {
					cols = "id, owner, balance" // the bare model has no field for the fencing columns
				}
				_, err := bdb.NewUpdate().Model(m).Set("balance = ?", 777).WherePK().Returning(cols).Exec(ctx)
				return checkReturned(ctx, m, err)
			}},
	}
	return shapeSuite{
		shape: s.name,
		ops:   ops,
		forUpdate: func(ctx context.Context, id int64, save bool) error {
			return bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				m := s.zero(id)
				if err := tx.NewSelect().Model(m).WherePK().For("UPDATE").Scan(ctx); err != nil {
					return err
				}
				if !save {
					return nil
				}
				setBalance(m, 888)
				_, err := tx.NewUpdate().Model(m).WherePK().Exec(ctx)
				return err
			})
		},
		write: func(ctx context.Context, id int64) error {
			return bunExec(ctx, bdb.NewUpdate().Model(s.zero(id)).Set("balance = ?", 1).WherePK())
		},
	}
}
