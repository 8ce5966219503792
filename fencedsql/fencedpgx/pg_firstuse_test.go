package fencedpgx_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	fschema "github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The pool's first-use work (docs/design.md G13: the records of what is guarded, the
// guarded tables' partitions and children, the listed tables' existence) through
// fencedpgx, which runs fencedsql's own (core.open) before its first statement. A
// red-team pass found all of these written unfenced through New, Wrap and NewConn while
// database/sql fenced or refused them.

const partitioned = `
CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL,
	fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE accounts_p1 PARTITION OF accounts FOR VALUES FROM (0) TO (1000)`

// firstUseEnv is a fresh database with ddl run and row 1 of accounts written by token
// 50 (balance 100, version 1).
type firstUseEnv struct {
	t   *testing.T
	ctx context.Context
	dsn string
	raw *pgxpool.Pool
}

func newFirstUseEnv(t *testing.T, ddl string) *firstUseEnv {
	t.Helper()
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := &firstUseEnv{t: t, ctx: ctx, dsn: dsn, raw: openPool(t, ctx, dsn, 2)}
	if _, err := e.raw.Exec(ctx, ddl); err != nil {
		t.Fatalf("schema: %v", err)
	}
	if _, err := e.raw.Exec(ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 50, 1)"); err != nil {
		t.Fatal(err)
	}
	return e
}

// pool is a fenced pool made by New over a new pgx pool.
func (e *firstUseEnv) pool(opts ...fencedsql.Option) *fencedpgx.Pool {
	e.t.Helper()
	db, err := fencedpgx.New(openPool(e.t, e.ctx, e.dsn, 4), opts...)
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	return db
}

// wrapped is a fenced pool made by Wrap over a new pgx pool.
func (e *firstUseEnv) wrapped(opts ...fencedsql.Option) *fencedpgx.Pool {
	e.t.Helper()
	db, err := fencedpgx.Wrap(openPool(e.t, e.ctx, e.dsn, 4), opts...)
	if err != nil {
		e.t.Fatalf("Wrap: %v", err)
	}
	return db
}

// conn is a fenced connection made by NewConn over a new pgx connection.
func (e *firstUseEnv) conn(opts ...fencedsql.Option) *fencedpgx.Conn {
	e.t.Helper()
	pc, err := pgx.Connect(e.ctx, e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = pc.Close(context.Background()) })
	c, err := fencedpgx.NewConn(pc, opts...)
	if err != nil {
		e.t.Fatalf("NewConn: %v", err)
	}
	return c
}

// unchanged fails unless row 1 is still token 50's.
func (e *firstUseEnv) unchanged() {
	e.t.Helper()
	var bal, tk int64
	if err := e.raw.QueryRow(e.ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tk); err != nil {
		e.t.Fatal(err)
	}
	if bal != 100 || tk != 50 {
		e.t.Fatalf("row 1 = balance %d token %d: a stale write was applied (want 100, 50)", bal, tk)
	}
}

// registerAccounts records accounts in the registry (fencedsql-schema -apply's record).
func (e *firstUseEnv) registerAccounts() {
	e.t.Helper()
	db, err := sql.Open("pgx", e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	if err := fschema.RegisterTables(e.ctx, db, postgres.Dialect, fschema.GuardSpec{Table: "accounts"}); err != nil {
		e.t.Fatal(err)
	}
}

// installGuard installs the database-side guard on accounts with schema.Check's Fix
// statements, which record it by its triggers only (no registry).
func (e *firstUseEnv) installGuard() {
	e.t.Helper()
	db, err := sql.Open("pgx", e.dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	fencetest.Guard(e.t, e.ctx, db, postgres.Dialect, fschema.GuardSpec{Table: "accounts"})
}

func wantTypo(t *testing.T, err error) {
	t.Helper()
	var se *fencedsql.SchemaError
	if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || se.Table != "acounts" {
		t.Fatalf("err = %v, want ErrSchema naming acounts", err)
	}
}

// A typo in Guard fails the first statement (and Ping, and CopyFrom) with ErrSchema
// naming the table, as fenced_tables does through database/sql; nothing of the
// statement is sent, and it fails again at the next call.
func TestFirstUseTypoInGuard(t *testing.T) {
	e := newFirstUseEnv(t, schema)
	stale := "UPDATE accounts SET balance = 1 WHERE id = 1"
	typo := fencedsql.Guard("acounts")
	t.Run("New", func(t *testing.T) {
		db := e.pool(typo)
		for i := 0; i < 2; i++ {
			_, err := db.Exec(tok(e.ctx, 20), stale)
			wantTypo(t, err)
		}
		wantTypo(t, db.Ping(e.ctx))
		rows, err := db.Query(e.ctx, "SELECT 1")
		rows.Close() // never nil, as pgx's
		wantTypo(t, err)
		tx, err := db.Begin(tok(e.ctx, 20))
		if err == nil {
			_ = tx.Rollback(e.ctx)
		}
		wantTypo(t, err)
		e.unchanged()
	})
	t.Run("NewPingFirst", func(t *testing.T) {
		wantTypo(t, e.pool(typo).Ping(e.ctx))
	})
	t.Run("NewCopyFirst", func(t *testing.T) {
		_, err := e.pool(typo).CopyFrom(e.ctx, pgx.Identifier{"audit_log"}, []string{"account_id"}, pgx.CopyFromRows([][]any{{int64(1)}}))
		wantTypo(t, err)
	})
	t.Run("Wrap", func(t *testing.T) {
		_, err := e.wrapped(typo).Exec(tok(e.ctx, 20), stale)
		wantTypo(t, err)
		e.unchanged()
	})
	t.Run("NewConn", func(t *testing.T) {
		c := e.conn(typo)
		_, err := c.Exec(tok(e.ctx, 20), stale)
		wantTypo(t, err)
		_, err = c.Prepare(e.ctx, "s", stale)
		wantTypo(t, err)
		br := c.SendBatch(tok(e.ctx, 20), batchOf(stale))
		defer br.Close()
		_, err = br.Exec()
		wantTypo(t, err)
		e.unchanged()
	})
	t.Run("DDLAllowed", func(t *testing.T) {
		// As through database/sql, a pool allowed to run DDL may create its listed
		// tables: it opens, but refuses its writes (of any table) with ErrSchema naming
		// the missing one until it exists (red-team rt34d F2).
		db := e.pool(typo, fencedsql.Guard("accounts"), fencedsql.WithDDL(true))
		_, err := db.Exec(tok(e.ctx, 20), stale)
		wantErr(t, err, fencedsql.ErrSchema)
		if !strings.Contains(err.Error(), "acounts") {
			t.Fatalf("err = %v, want it to name the missing listed table acounts", err)
		}
		e.unchanged()
	})
}

func batchOf(sqls ...string) *pgx.Batch {
	b := &pgx.Batch{}
	for _, s := range sqls {
		b.Queue(s)
	}
	return b
}

// A table the database records as guarded is fenced whether or not a Guard names it:
// the registry (fencedsql-schema -apply, schema.RegisterTables) and the guard's own
// triggers (schema.Check's Fix) are both read.
func TestFirstUseRecordedTableFenced(t *testing.T) {
	// An UPDATE that advances version itself: the database-side guard lets it through,
	// only the wrapper's fence refuses the stale token.
	stale := "UPDATE accounts SET balance = 1, version = version + 1 WHERE id = 1"
	for _, rec := range []string{"registry", "triggers"} {
		t.Run(rec, func(t *testing.T) {
			e := newFirstUseEnv(t, schema+`;
CREATE TABLE orders (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
			if rec == "registry" {
				e.registerAccounts()
			} else {
				e.installGuard()
			}
			for name, exec := range map[string]func(context.Context, string, ...any) error{
				"New, no Guard": func(ctx context.Context, q string, a ...any) error {
					_, err := e.pool().Exec(ctx, q, a...)
					return err
				},
				"New, Guard(orders)": func(ctx context.Context, q string, a ...any) error {
					_, err := e.pool(fencedsql.Guard("orders")).Exec(ctx, q, a...)
					return err
				},
				"Wrap": func(ctx context.Context, q string, a ...any) error {
					_, err := e.wrapped(fencedsql.Guard("orders")).Exec(ctx, q, a...)
					return err
				},
				"NewConn, in a transaction": func(ctx context.Context, q string, a ...any) error {
					tx, err := e.conn(fencedsql.Guard("orders")).Begin(ctx)
					if err != nil {
						return err
					}
					defer func() { _ = tx.Rollback(e.ctx) }()
					_, err = tx.Exec(ctx, q, a...)
					return err
				},
			} {
				t.Run(name, func(t *testing.T) {
					wantErr(t, exec(tok(e.ctx, 20), stale), fencedsql.ErrFenced)
					e.unchanged()
				})
			}
		})
	}
}

// The first statements of many goroutines on a new pool: one runs the first-use work,
// the others wait for it; every one is fenced by the registry's record (run with -race).
func TestFirstUseConcurrentFirstStatements(t *testing.T) {
	e := newFirstUseEnv(t, schema)
	e.registerAccounts()
	db := e.pool()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = db.Exec(tok(e.ctx, 20), "UPDATE accounts SET balance = 1 WHERE id = 1")
		}()
	}
	wg.Wait()
	for _, err := range errs {
		wantErr(t, err, fencedsql.ErrFenced)
	}
	e.unchanged()
}

// A partition of a guarded table written by its own name is fenced like the table.
func TestFirstUsePartitionFenced(t *testing.T) {
	e := newFirstUseEnv(t, partitioned)
	guard := fencedsql.Guard("accounts")
	stale := "UPDATE accounts_p1 SET balance = 1 WHERE id = 1"
	t.Run("New", func(t *testing.T) {
		_, err := e.pool(guard).Exec(tok(e.ctx, 20), stale)
		wantErr(t, err, fencedsql.ErrFenced)
		if err == nil || !strings.Contains(err.Error(), "accounts_p1") {
			t.Fatalf("err = %v, want one naming accounts_p1", err)
		}
		e.unchanged()
	})
	t.Run("NewDelete", func(t *testing.T) {
		_, err := e.pool(guard).Exec(tok(e.ctx, 20), "DELETE FROM accounts_p1 WHERE id = 1")
		wantErr(t, err, fencedsql.ErrFenced)
		e.unchanged()
	})
	t.Run("NewConnTx", func(t *testing.T) {
		tx, err := e.conn(guard).Begin(tok(e.ctx, 20))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(e.ctx) }()
		_, err = tx.Exec(e.ctx, stale)
		wantErr(t, err, fencedsql.ErrFenced)
		e.unchanged()
	})
	t.Run("Batch", func(t *testing.T) {
		br := e.pool(guard).SendBatch(tok(e.ctx, 20), batchOf(stale))
		defer br.Close() // the pool's connection returns to it (its Close waits for it)
		_, err := br.Exec()
		wantErr(t, err, fencedsql.ErrFenced)
		e.unchanged()
	})
}

// CopyFrom into a partition of a guarded table is refused like CopyFrom into the
// table, on the pool's first call as on later ones; nothing is copied.
func TestFirstUseCopyIntoPartitionRefused(t *testing.T) {
	e := newFirstUseEnv(t, partitioned)
	guard := fencedsql.Guard("accounts")
	rows := func() pgx.CopyFromSource { return pgx.CopyFromRows([][]any{{int64(2), int64(1)}}) }
	cols := []string{"id", "balance"}
	for name, copyFn := range map[string]func() (int64, error){
		"New": func() (int64, error) {
			return e.pool(guard).CopyFrom(e.ctx, pgx.Identifier{"accounts_p1"}, cols, rows())
		},
		"NewQualified": func() (int64, error) {
			return e.pool(guard).CopyFrom(e.ctx, pgx.Identifier{"public", "accounts_p1"}, cols, rows())
		},
		"Wrap": func() (int64, error) {
			return e.wrapped(guard).CopyFrom(e.ctx, pgx.Identifier{"accounts_p1"}, cols, rows())
		},
		"NewConn": func() (int64, error) {
			return e.conn(guard).CopyFrom(e.ctx, pgx.Identifier{"accounts_p1"}, cols, rows())
		},
		"NewConnTx": func() (int64, error) {
			tx, err := e.conn(guard).Begin(e.ctx)
			if err != nil {
				return 0, err
			}
			defer func() { _ = tx.Rollback(e.ctx) }()
			return tx.CopyFrom(e.ctx, pgx.Identifier{"accounts_p1"}, cols, rows())
		},
	} {
		t.Run(name, func(t *testing.T) {
			n, err := copyFn()
			wantErr(t, err, fencedsql.ErrUnsupported)
			if n != 0 {
				t.Fatalf("copied %d rows", n)
			}
			var count int
			if err := e.raw.QueryRow(e.ctx, "SELECT count(*) FROM accounts").Scan(&count); err != nil || count != 1 {
				t.Fatalf("accounts holds %d rows (%v), want 1", count, err)
			}
		})
	}
}
