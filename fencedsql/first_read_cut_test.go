package fencedsql_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// cutConn is a driver connection under a layer that cuts the connection once, at the
// first query that holds match (a network blip, a server restart, a statement
// timeout: io.ErrUnexpectedEOF).
type cutFull interface {
	driver.Conn
	driver.QueryerContext
	driver.ExecerContext
	driver.ConnBeginTx
	driver.ConnPrepareContext
}

type cutConn struct {
	cutFull
	d cutDriver
}

func (c cutConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if !strings.Contains(q, c.d.match) {
		return c.cutFull.QueryContext(ctx, q, args)
	}
	if c.d.asked != nil {
		c.d.asked.Add(1)
	}
	if c.d.cut.CompareAndSwap(false, true) {
		return nil, io.ErrUnexpectedEOF
	}
	return c.cutFull.QueryContext(ctx, q, args)
}

type cutDriver struct {
	cut   *atomic.Bool
	match string        // the first query holding it is cut
	base  driver.Driver // nil: modernc's SQLite
	asked *atomic.Int32 // if set, counts the queries holding match
}

func (d cutDriver) Open(name string) (driver.Conn, error) {
	base := d.base
	if base == nil {
		base = &msqlite.Driver{}
	}
	c, err := base.Open(name)
	if err != nil {
		return nil, err
	}
	return cutConn{c.(cutFull), d}, nil
}

// With the schema check off, a read of the registry of guarded tables cut by the
// connection is a *CheckCutError and the next connection reads it again (red-team
// rt46c F4: it was taken for a mock's unanswered query, logged, and the pool's
// first-connection work marked done without the registry for the life of the pool,
// and a stale write of a table the database records as guarded landed).
func TestRegistryReadCutWithCheckOffReadAgain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path,
		`CREATE TABLE fr_acc (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO fr_acc (id, fence_token, version) VALUES (1, 10, 1)`,
		`CREATE TABLE fr_listed (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "fr_acc"}); err != nil {
		t.Fatal(err)
	}
	{ // control: the same pool without the cut refuses the stale write
		ctl := fencedsql.OpenDB(fencedsql.DSNConnector(cutDriver{cut: new(atomic.Bool), match: "\x00never"}, "file:"+path),
			fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("fr_listed"), fencedsql.WithSchemaCheck(false))
		_, err := ctl.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE fr_acc SET balance = 666 WHERE id = 1`)
		ctl.Close()
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("control, no cut: stale UPDATE: %v; want ErrFenced", err)
		}
	}
	cut := new(atomic.Bool)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(cutDriver{cut: cut, match: dialect.RegistryTable}, "file:"+path),
		fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("fr_listed"), fencedsql.WithSchemaCheck(false))
	t.Cleanup(func() { db.Close() })
	first := db.PingContext(ctx)
	if !cut.Load() {
		t.Fatalf("setup: the registry read was not cut (ping: %v)", first)
	}
	if !errors.As(first, new(*fencedsql.CheckCutError)) {
		t.Errorf("ping whose registry read was cut: %v; want a *CheckCutError", first)
	}
	// The pool's later statements, on any connection: the stale write.
	var err error
	for range 3 {
		if _, err = db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE fr_acc SET balance = 666 WHERE id = 1`); err != nil {
			break
		}
	}
	var bal int64
	if qerr := raw.QueryRow(`SELECT balance FROM fr_acc WHERE id = 1`).Scan(&bal); qerr != nil {
		t.Fatal(qerr)
	}
	if bal == 666 || !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("after the first connection's registry read was cut (ping: %v): stale UPDATE (token 5 < row's 10) of a registered table: %v, balance now %d; want ErrFenced (the registry read again on the next connection), nothing written", first, err, bal)
	}
}

// The same for the query for the guarded table's partitions (red-team rt46c F4,
// PostgreSQL: the partition was never guarded by the pool, and a stale UPDATE naming
// it that advances the version passed the cloned row guard).
func TestPartitionQueryCutWithCheckOffReadAgain(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Postgres(t)
	admin := testdb.Open(t, "pgx", pg,
		`CREATE TABLE fr_p (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) PARTITION BY RANGE (id)`,
		`CREATE TABLE fr_p1 PARTITION OF fr_p FOR VALUES FROM (0) TO (100)`,
		`INSERT INTO fr_p (id, fence_token, version) VALUES (1, 10, 1)`)
	reps, err := schema.Check(ctx, admin, postgres.Dialect, schema.GuardSpec{Table: "fr_p"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		testdb.Exec(t, admin, r.Fix...)
	}
	{ // control: the same pool without the cut refuses the stale write
		ctl := fencedsql.OpenDB(fencedsql.DSNConnector(cutDriver{cut: new(atomic.Bool), match: "\x00never", base: stdlib.GetDefaultDriver()}, pg),
			fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("fr_p"), fencedsql.WithSchemaCheck(false))
		_, err := ctl.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE fr_p1 SET balance = 666, version = version + 1 WHERE id = 1`)
		ctl.Close()
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("control, no cut: stale UPDATE: %v; want ErrFenced", err)
		}
	}
	cut := new(atomic.Bool)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(cutDriver{cut: cut, match: "d(oid) AS (", base: stdlib.GetDefaultDriver()}, pg),
		fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("fr_p"), fencedsql.WithSchemaCheck(false))
	t.Cleanup(func() { db.Close() })
	first := db.PingContext(ctx)
	if !cut.Load() {
		t.Fatalf("setup: the partitions query was not cut (ping: %v)", first)
	}
	if !errors.As(first, new(*fencedsql.CheckCutError)) {
		t.Errorf("ping whose partitions query was cut: %v; want a *CheckCutError", first)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE fr_p1 SET balance = 666, version = version + 1 WHERE id = 1`)
	var bal, tok int64
	if qerr := admin.QueryRow(`SELECT balance, fence_token FROM fr_p WHERE id = 1`).Scan(&bal, &tok); qerr != nil {
		t.Fatal(qerr)
	}
	if bal == 666 || !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("after the first connection's partitions query was cut (ping: %v): stale UPDATE (token 5 < row's 10) naming the partition: %v, row now balance %d token %d; want ErrFenced, nothing written", first, err, bal, tok)
	}
}

// The same for the query for the relations that reach a system catalog (PostgreSQL,
// loadCatalogViews): cut, the ping is a *CheckCutError and the next connection asks
// again.
func TestCatalogViewsQueryCutWithCheckOffAskedAgain(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Postgres(t)
	testdb.Open(t, "pgx", pg,
		`CREATE TABLE fr_cv (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	for _, match := range []string{"WITH RECURSIVE refs(relid, ref)"} {
		cut, asked := new(atomic.Bool), new(atomic.Int32)
		db := fencedsql.OpenDB(fencedsql.DSNConnector(cutDriver{cut: cut, match: match, base: stdlib.GetDefaultDriver(), asked: asked}, pg),
			fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("fr_cv"), fencedsql.WithSchemaCheck(false))
		first := db.PingContext(ctx)
		if !cut.Load() {
			t.Fatalf("setup: %q was not cut (ping: %v)", match, first)
		}
		if !errors.As(first, new(*fencedsql.CheckCutError)) {
			t.Errorf("ping whose %q query was cut: %v; want a *CheckCutError", match, first)
		}
		before := asked.Load()
		if err := db.PingContext(ctx); err != nil {
			t.Errorf("second ping: %v", err)
		}
		if asked.Load() == before {
			t.Errorf("the query %q cut on the first connection was not asked again", match)
		}
		db.Close()
	}
}
