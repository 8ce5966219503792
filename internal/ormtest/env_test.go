package ormtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	pgdialect "github.com/fencedsql/fencedsql/dialects/postgres"
	sqlitedialect "github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Tokens used by every case: a row is seeded by tokOld (or tokNewer for the stale and
// resurrection cases), the operation under test runs with tokMine, a newer holder that
// claims a row FOR UPDATE uses tokNewer.
const (
	tokOld   uint64 = 10
	tokMine  uint64 = 20
	tokNewer uint64 = 50

	// lieToken and lieVersion are what an "rw" model carries in its fencing fields: the
	// wrapper must replace them by its own assignments.
	lieToken   int64 = 1 << 40
	lieVersion int64 = 424242
)

// backend is one database.
type backend struct {
	name    string // "postgres", "mysql", "sqlite"
	fenced  string // fenced driver name
	raw     string // plain driver name
	dsn     func(testing.TB) string
	dialect dialect.Dialect
	ddl     string
	ph      func(n int) string // the n-th placeholder (1-based)
	mode    string             // non-empty: a driver mode of env.inMode (driverModes)
}

func qmark(int) string       { return "?" }
func dollar(n int) string    { return fmt.Sprintf("$%d", n) }
func (b backend) pg() bool   { return b.name == "postgres" }
func (b backend) my() bool   { return b.name == "mysql" }
func (b backend) lite() bool { return b.name == "sqlite" }

// returning: UPDATE … RETURNING exists (PostgreSQL, SQLite ≥ 3.35; not MariaDB/MySQL).
func (b backend) returning() bool { return !b.my() }

// forUpdate: SELECT … FOR UPDATE exists (not in SQLite).
func (b backend) forUpdate() bool { return !b.lite() }

var backends = []backend{
	{
		name: "postgres", fenced: "fenced-pgx", raw: "pgx", dsn: testdb.Postgres, dialect: pgdialect.Dialect, ph: dollar,
		ddl: `CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner TEXT, balance BIGINT, deleted_at TIMESTAMP NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
	},
	{
		name: "mysql", fenced: "fenced-mysql", raw: "mysql", dsn: testdb.MySQL, dialect: mysqldialect.Dialect, ph: qmark,
		ddl: `CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner VARCHAR(100), balance BIGINT, deleted_at DATETIME(3) NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`,
	},
	{
		name: "sqlite", fenced: "fenced-sqlite", raw: "sqlite", dsn: testdb.SQLite, dialect: sqlitedialect.Dialect, ph: qmark,
		ddl: `CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner TEXT, balance BIGINT, deleted_at TIMESTAMP NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
	},
}

// env is one fresh database: db is the fenced pool (fenced_tables=accounts), raw a
// plain pool on the same database.
type env struct {
	b   backend
	db  *sql.DB
	raw *sql.DB
	dsn string                    // the database's, without fenced_tables
	cur atomic.Pointer[testing.T] // the running subtest, for the ORMs' SQL logs
}

// enter makes t the test that the ORMs' SQL logs go to until it ends.
func (e *env) enter(t *testing.T) {
	prev := e.cur.Swap(t)
	t.Cleanup(func() { e.cur.Store(prev) })
}

// logf logs to the running subtest (the cases run sequentially).
func (e *env) logf(format string, args ...any) {
	if t := e.cur.Load(); t != nil {
		t.Logf(format, args...)
	}
}

func withParam(dsn, kv string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}

// setup creates the accounts table on a fresh database, installs the database-side
// guard and the tombstone guard with schema.Check's Fix statements on the plain connection, and opens both pools.
func setup(t *testing.T, b backend) *env {
	t.Helper()
	return setupTables(t, b, []string{"accounts"}, b.ddl)
}

// setupTables is setup for other tables: it runs ddl, then guards tables and opens the
// fenced pool with fenced_tables listing them.
func setupTables(t *testing.T, b backend, tables []string, ddl ...string) *env {
	t.Helper()
	dsn := b.dsn(t)
	raw, err := sql.Open(b.raw, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range ddl {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("create table: %v", err)
		}
	}
	specs := make([]schema.GuardSpec, len(tables))
	for i, table := range tables {
		specs[i] = schema.GuardSpec{Table: table}
	}
	fencetest.Guard(t, ctx, raw, b.dialect, specs...)
	if reps, err := schema.Check(ctx, raw, b.dialect, specs...); err != nil || len(reps) != len(specs) || !allOK(reps) {
		t.Fatalf("schema.Check after fix: %v %+v", err, reps)
	}
	db, err := sql.Open(b.fenced, withParam(dsn, "fenced_tables="+strings.Join(tables, ",")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &env{b: b, db: db, raw: raw, dsn: dsn}
}

func allOK(reps []schema.TableReport) bool {
	for _, r := range reps {
		if !r.OK() {
			return false
		}
	}
	return true
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var nextID atomic.Int64

func init() { nextID.Store(1000) }

// newID returns an id whose neighbourhood id..id+9 is unused (batch creates use id+1).
func newID() int64 { return nextID.Add(10) }

// dbRow is a row as the plain connection sees it.
type dbRow struct {
	Exists         bool
	Owner          sql.NullString
	Balance        sql.NullInt64
	Deleted        bool
	Token, Version int64
}

func (r dbRow) String() string {
	if !r.Exists {
		return "<no row>"
	}
	return fmt.Sprintf("{owner=%q balance=%v deleted=%v fence_token=%d version=%d}",
		r.Owner.String, r.Balance.Int64, r.Deleted, r.Token, r.Version)
}

func (e *env) row(t *testing.T, id int64) dbRow {
	t.Helper()
	r, err := e.rowErr(id)
	if err != nil {
		t.Fatalf("plain read of row %d: %v", id, err)
	}
	return r
}

// rowErr is row for a goroutine other than the test's.
func (e *env) rowErr(id int64) (dbRow, error) {
	var r dbRow
	var deleted int64
	err := e.raw.QueryRowContext(context.Background(),
		"SELECT owner, balance, CASE WHEN deleted_at IS NULL THEN 0 ELSE 1 END, fence_token, version FROM accounts WHERE id = "+e.b.ph(1), id).
		Scan(&r.Owner, &r.Balance, &deleted, &r.Token, &r.Version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return dbRow{}, nil
	case err != nil:
		return dbRow{}, err
	}
	r.Exists, r.Deleted = true, deleted != 0
	return r, nil
}

// seed inserts row id (owner "alice", balance 100) through the fenced pool with tok,
// then bumps its version once more (so version is 2 and ExpectVersion(1) is stale).
func (e *env) seed(t *testing.T, id int64, tok uint64) dbRow {
	t.Helper()
	ctx := fencedsql.WithToken(testCtx(t), tok)
	if _, err := e.db.ExecContext(ctx, fmt.Sprintf("INSERT INTO accounts (id, owner, balance) VALUES (%s, %s, %s)",
		e.b.ph(1), e.b.ph(2), e.b.ph(3)), id, "alice", 100); err != nil {
		t.Fatalf("seed row %d with token %d: %v", id, tok, err)
	}
	if _, err := e.db.ExecContext(ctx, "UPDATE accounts SET balance = balance WHERE id = "+e.b.ph(1), id); err != nil {
		t.Fatalf("seed update of row %d with token %d: %v", id, tok, err)
	}
	r := e.row(t, id)
	if !r.Exists || r.Token != int64(tok) {
		t.Fatalf("seeded row %d with token %d reads back as %v", id, tok, r)
	}
	return r
}

// hardDelete deletes row id through the fenced pool with tok (the newer holder).
func (e *env) hardDelete(t *testing.T, id int64, tok uint64) {
	t.Helper()
	ctx := fencedsql.WithToken(testCtx(t), tok)
	if _, err := e.db.ExecContext(ctx, "DELETE FROM accounts WHERE id = "+e.b.ph(1), id); err != nil {
		t.Fatalf("newer holder's DELETE of row %d with token %d: %v", id, tok, err)
	}
	if r := e.row(t, id); r.Exists {
		t.Fatalf("row %d still there after DELETE: %v", id, r)
	}
}

// op is one ORM operation bound to an ORM handle and a model shape.
type op struct {
	name string
	// existing: the operation targets an existing row (Fresh/Stale/NoToken/VersionConflict
	// run on a seeded row). inserts: it can create the row (FreshInsert on an absent id,
	// NoResurrection). deletes: Fresh leaves no row.
	existing, inserts, deletes bool
	// noVersion: ExpectVersion does not apply (skip VersionConflict).
	noVersion bool
	skip      string // non-empty: why this database cannot run it
	run       func(ctx context.Context, id int64) error
	// check verifies the business effect of a successful run (may be nil); before is the
	// row before (Exists false for an insert).
	check func(t *testing.T, e *env, id int64, before, after dbRow)
}

// shapeSuite is what an ORM provides for one model shape.
type shapeSuite struct {
	shape string
	ops   []op
	// forUpdate: in a transaction bound to ctx's token, read row id with FOR UPDATE, then
	// (if save) write it back with the ORM's save, and commit.
	forUpdate func(ctx context.Context, id int64, save bool) error
	// write: an older holder's ordinary update of row id (balance = 1).
	write func(ctx context.Context, id int64) error
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("got error %v (%T), want errors.Is(err, %v)", err, err, target)
	}
}

func wantUnchanged(t *testing.T, e *env, id int64, before dbRow) {
	t.Helper()
	if after := e.row(t, id); after != before {
		t.Errorf("row %d changed: before %v, after %v", id, before, after)
	}
}

// runSuites runs every case for every shape of one ORM on one database.
func runSuites(t *testing.T, e *env, suites []shapeSuite) {
	for _, s := range suites {
		t.Run(s.shape, func(t *testing.T) {
			for _, o := range s.ops {
				if o.skip != "" {
					// A form the database does not have (o.skip says which): no case, not
					// a skipped one.
					continue
				}
				t.Run(o.name, func(t *testing.T) { runOp(t, e, o) })
			}
		})
	}
	t.Run("NoResurrection", func(t *testing.T) {
		for _, s := range suites {
			t.Run(s.shape, func(t *testing.T) {
				for _, o := range s.ops {
					if !o.inserts || o.skip != "" {
						continue
					}
					t.Run(o.name, func(t *testing.T) {
						e.enter(t)
						id := newID()
						e.seed(t, id, tokOld)
						e.hardDelete(t, id, tokNewer)
						err := o.run(fencedsql.WithToken(testCtx(t), tokMine), id)
						wantErr(t, err, fencedsql.ErrFenced)
						for _, i := range []int64{id, id + 1} {
							if r := e.row(t, i); r.Exists {
								t.Errorf("row %d resurrected (or batch partly applied) by token %d after token %d deleted row %d: %v",
									i, tokMine, tokNewer, id, r)
							}
						}
					})
				}
			})
		}
	})
	if !e.b.forUpdate() {
		// SQLite has no SELECT … FOR UPDATE (a write transaction locks the whole
		// database instead): no ForUpdate cases there.
		return
	}
	t.Run("ForUpdate", func(t *testing.T) {
		for _, s := range suites {
			t.Run(s.shape, func(t *testing.T) {
				for _, save := range []bool{false, true} {
					name := "ReadOnly"
					if save {
						name = "Save"
					}
					t.Run(name, func(t *testing.T) {
						e.enter(t)
						id := newID()
						e.seed(t, id, tokOld)
						ctx := testCtx(t)
						if err := s.forUpdate(fencedsql.WithToken(ctx, tokNewer), id, save); err != nil {
							t.Fatalf("newer holder (token %d) FOR UPDATE read (save=%v): %v", tokNewer, save, err)
						}
						claimed := e.row(t, id)
						if claimed.Token != int64(tokNewer) {
							t.Errorf("after token %d's FOR UPDATE (save=%v) the row is %v, want fence_token %d (claimed)",
								tokNewer, save, claimed, tokNewer)
						}
						err := s.write(fencedsql.WithToken(ctx, tokMine), id)
						wantErr(t, err, fencedsql.ErrFenced)
						wantUnchanged(t, e, id, claimed)
					})
				}
			})
		}
	})
}

func runOp(t *testing.T, e *env, o op) {
	e.enter(t)
	ctx := testCtx(t)
	if o.existing {
		t.Run("Fresh", func(t *testing.T) {
			e.enter(t)
			id := newID()
			before := e.seed(t, id, tokOld)
			if err := o.run(fencedsql.WithToken(ctx, tokMine), id); err != nil {
				t.Fatalf("token %d on a row of token %d: %v", tokMine, tokOld, err)
			}
			after := e.row(t, id)
			switch {
			case o.deletes:
				if after.Exists {
					t.Errorf("row %d still there after delete: %v", id, after)
				}
			case after.Token != int64(tokMine) || after.Version <= before.Version:
				t.Errorf("row %d after token %d: %v, want fence_token %d and version > %d", id, tokMine, after, tokMine, before.Version)
			}
			if o.check != nil {
				o.check(t, e, id, before, after)
			}
		})
		t.Run("Stale", func(t *testing.T) {
			e.enter(t)
			id := newID()
			before := e.seed(t, id, tokNewer)
			err := o.run(fencedsql.WithToken(ctx, tokMine), id)
			wantErr(t, err, fencedsql.ErrFenced)
			wantUnchanged(t, e, id, before)
		})
		t.Run("NoToken", func(t *testing.T) {
			e.enter(t)
			id := newID()
			before := e.seed(t, id, tokOld)
			wantErr(t, o.run(ctx, id), fencedsql.ErrNoToken)
			wantUnchanged(t, e, id, before)
		})
		if !o.noVersion {
			t.Run("VersionConflict", func(t *testing.T) {
				e.enter(t)
				id := newID()
				before := e.seed(t, id, tokOld)
				err := o.run(fencedsql.ExpectVersion(fencedsql.WithToken(ctx, tokMine), before.Version-1), id)
				wantErr(t, err, fencedsql.ErrVersionConflict)
				wantUnchanged(t, e, id, before)
			})
		}
	}
	if o.inserts {
		t.Run("FreshInsert", func(t *testing.T) {
			e.enter(t)
			id := newID()
			if err := o.run(fencedsql.WithToken(ctx, tokMine), id); err != nil {
				t.Fatalf("insert with token %d: %v", tokMine, err)
			}
			after := e.row(t, id)
			if after.Token != int64(tokMine) || after.Version < 1 {
				t.Errorf("row %d after insert with token %d: %v, want fence_token %d and version >= 1", id, tokMine, after, tokMine)
			}
			if o.check != nil {
				o.check(t, e, id, dbRow{}, after)
			}
		})
		if !o.existing {
			t.Run("NoToken", func(t *testing.T) {
				e.enter(t)
				id := newID()
				wantErr(t, o.run(ctx, id), fencedsql.ErrNoToken)
				for _, i := range []int64{id, id + 1} {
					if r := e.row(t, i); r.Exists {
						t.Errorf("row %d inserted without a token: %v", i, r)
					}
				}
			})
		}
	}
}

// Common checks.

func wantBalance(want int64) func(*testing.T, *env, int64, dbRow, dbRow) {
	return func(t *testing.T, _ *env, id int64, _, after dbRow) {
		t.Helper()
		if after.Balance.Int64 != want {
			t.Errorf("row %d balance = %d, want %d", id, after.Balance.Int64, want)
		}
	}
}

func wantIncrement(by int64) func(*testing.T, *env, int64, dbRow, dbRow) {
	return func(t *testing.T, _ *env, id int64, before, after dbRow) {
		t.Helper()
		if after.Balance.Int64 != before.Balance.Int64+by {
			t.Errorf("row %d balance = %d, want %d+%d", id, after.Balance.Int64, before.Balance.Int64, by)
		}
	}
}

func wantSoftDeleted(t *testing.T, _ *env, id int64, _, after dbRow) {
	t.Helper()
	if !after.Deleted {
		t.Errorf("row %d not soft-deleted: %v", id, after)
	}
}

// wantBatch: rows id and id+1 both exist with tokMine and balance 777.
func wantBatch(t *testing.T, e *env, id int64, _, _ dbRow) {
	t.Helper()
	for _, i := range []int64{id, id + 1} {
		r := e.row(t, i)
		if r.Token != int64(tokMine) || r.Balance.Int64 != 777 || r.Version < 1 {
			t.Errorf("batch row %d: %v, want fence_token %d balance 777", i, r, tokMine)
		}
	}
}

// wantReturned checks the fence token an ORM scanned back from RETURNING.
func wantReturned(t *testing.T, got int64, ok bool) {
	t.Helper()
	if ok && got != int64(tokMine) {
		t.Errorf("RETURNING gave fence_token %d to the model, want %d", got, tokMine)
	}
}
