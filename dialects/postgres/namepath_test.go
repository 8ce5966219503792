package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The pool's name verdicts hold only for connections that resolve names as the one
// that made them (docs/design.md G13, red-team rt40b F2): a connection the pool opens
// after another client changed a default outside the pool resolves the guarded name
// through another search_path, and is checked on its own.

// namePathSetup makes public.np_acc (fit) and np_s.np_acc (nullable fencing columns,
// a tenant's or legacy copy), row 1 at token 20 in each, and returns the plain pool
// and the database's name.
func namePathSetup(t *testing.T) (raw *sql.DB, dsn, dbname string) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = testdb.Open(t, "pgx", dsn,
		"CREATE TABLE np_acc (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO np_acc VALUES (1, 100, 20, 1)",
		"CREATE SCHEMA np_s",
		"CREATE TABLE np_s.np_acc (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT, version BIGINT)",
		"INSERT INTO np_s.np_acc VALUES (1, 100, 20, 1)")
	if err := raw.QueryRow("SELECT current_database()").Scan(&dbname); err != nil {
		t.Fatal(err)
	}
	return raw, dsn, dbname
}

// staleWriteRefused sends a stale write (token 5, the rows' token 20) through db on a
// new connection and fails unless it is refused with ErrSchema and np_s.np_acc's row
// is unchanged.
func staleWriteRefused(t *testing.T, raw, db *sql.DB) {
	t.Helper()
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), "UPDATE np_acc SET balance = 666 WHERE id = 1")
	var bal int64
	var tok sql.NullInt64
	if qerr := raw.QueryRow("SELECT balance, fence_token FROM np_s.np_acc WHERE id = 1").Scan(&bal, &tok); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || bal != 100 || !tok.Valid {
		t.Fatalf("stale write on a connection resolving np_acc to np_s.np_acc: err = %v; np_s.np_acc now balance %d, fence_token %v; want ErrSchema (nullable fencing columns) and the row unchanged", err, bal, tok)
	}
}

// firstWrite makes the pool's verdict on np_acc, on a connection resolving it to
// public.np_acc.
func firstWrite(t *testing.T, db *sql.DB) {
	t.Helper()
	db.SetMaxIdleConns(0) // every statement on a new connection
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 30), "UPDATE np_acc SET balance = 101 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
}

// ALTER DATABASE … SET search_path on a plain connection (what the fenced pool's
// refusal of the statement tells the user to do) while the pool runs.
func TestAlterDatabaseSearchPathNewConnectionRechecked(t *testing.T) {
	raw, dsn, dbname := namePathSetup(t)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=np_acc")
	firstWrite(t, db)
	testdb.Exec(t, raw, `ALTER DATABASE "`+dbname+`" SET search_path = np_s, public`)
	staleWriteRefused(t, raw, db)
}

// The same through the role's setting in the database (ALTER ROLE … IN DATABASE …
// SET), which is the one a new connection of that role takes.
func TestAlterRoleInDatabaseSearchPathNewConnectionRechecked(t *testing.T) {
	raw, dsn, dbname := namePathSetup(t)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=np_acc")
	firstWrite(t, db)
	testdb.Exec(t, raw, `ALTER ROLE CURRENT_USER IN DATABASE "`+dbname+`" SET search_path = np_s, public`)
	staleWriteRefused(t, raw, db)
}

// laterConnector opens its first connection with first and every later one with later:
// connections of one pool that start with different settings (a pooler, a DSN's
// options for some hosts, a connection hook).
type laterConnector struct {
	d            driver.Driver
	first, later string
	n            atomic.Int64
}

func (c *laterConnector) Connect(context.Context) (driver.Conn, error) {
	if c.n.Add(1) == 1 {
		return c.d.Open(c.first)
	}
	return c.d.Open(c.later)
}

func (c *laterConnector) Driver() driver.Driver { return c.d }

// Connections of one pool whose search_path differs from their start (a startup
// parameter here), under pgx (the path read with synchronous_commit, no round trip of
// its own) and under a driver whose session the dialect does not track (the name path
// query).
func TestPerConnectionSearchPathRechecked(t *testing.T) {
	for _, tracked := range []bool{true, false} {
		name := "pgx"
		if !tracked {
			name = "untracked"
		}
		t.Run(name, func(t *testing.T) {
			raw, dsn, _ := namePathSetup(t)
			var d driver.Driver = raw.Driver()
			if !tracked {
				d = hiddenDriver{d}
			}
			c := &laterConnector{d: d, first: dsn, later: dsn + "&search_path=np_s,public"}
			db := fencedsql.OpenDB(c, fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("np_acc"))
			t.Cleanup(func() { db.Close() })
			firstWrite(t, db)
			staleWriteRefused(t, raw, db)
			// A connection that resolves as the first still writes (its own check).
			c.later = dsn
			if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 31), "UPDATE np_acc SET balance = 102 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// hiddenDriver opens connections the dialect cannot see pgx through: its session is
// read by queries, as under lib/pq.
type hiddenDriver struct{ d driver.Driver }

func (h hiddenDriver) Open(name string) (driver.Conn, error) {
	c, err := h.d.Open(name)
	if err != nil {
		return nil, err
	}
	return hiddenConn{c.(interface {
		driver.Conn
		driver.ExecerContext
		driver.QueryerContext
	})}, nil
}

type hiddenConn struct {
	inner interface {
		driver.Conn
		driver.ExecerContext
		driver.QueryerContext
	}
}

func (h hiddenConn) Prepare(q string) (driver.Stmt, error) { return h.inner.Prepare(q) }
func (h hiddenConn) Close() error                          { return h.inner.Close() }
func (h hiddenConn) Begin() (driver.Tx, error)             { return h.inner.Begin() } //nolint:staticcheck // required by driver.Conn
func (h hiddenConn) ExecContext(ctx context.Context, q string, a []driver.NamedValue) (driver.Result, error) {
	return h.inner.ExecContext(ctx, q, a)
}
func (h hiddenConn) QueryContext(ctx context.Context, q string, a []driver.NamedValue) (driver.Rows, error) {
	return h.inner.QueryContext(ctx, q, a)
}
