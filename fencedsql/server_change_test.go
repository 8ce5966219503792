package fencedsql_test

import (
	"context"
	"database/sql"

	"database/sql/driver"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// serverFake is a driver whose connections reach "the server" current when they
// open (a DSN that a failover moves to another server): each answers the MySQL
// dialect's name resolution query with that server's identity, its session query as a
// good session, the column check of accounts as fit, and every other catalog read with
// no row (nothing recorded, no door). It records the queries each connection ran.
type serverFake struct {
	mu      sync.Mutex
	server  string
	queries []string // "<server> <kind>"
	// guarded maps a server to a table its guard triggers record as guarded.
	guarded map[string]string
	// oneColumn answers the name resolution query without the server's identity, as a
	// mock written for the earlier query does.
	oneColumn bool
}

func (f *serverFake) Connect(context.Context) (driver.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &serverFakeConn{f: f, server: f.server}, nil
}

func (f *serverFake) Driver() driver.Driver { return nil }

func (f *serverFake) moveTo(server string) {
	f.mu.Lock()
	f.server = server
	f.mu.Unlock()
}

// take returns and forgets the queries recorded so far.
func (f *serverFake) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queries
	f.queries = nil
	return q
}

type serverFakeConn struct {
	f      *serverFake
	server string
}

func (c *serverFakeConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (c *serverFakeConn) Close() error                        { return nil }
func (c *serverFakeConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }

func (c *serverFakeConn) ExecContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	c.record("exec " + q)
	return driver.RowsAffected(1), nil
}

func (c *serverFakeConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	d := mysqldialect.Dialect
	cq, _ := d.ColumnsQuery(dialect.TableName{Name: "accounts"})
	switch {
	case q == d.(dialect.NamePather).NamePathQuery():
		c.record("namepath")
		if c.f.oneColumn {
			return &serverFakeRows{cols: []string{"db"}, rows: [][]driver.Value{{"app"}}}, nil
		}
		return &serverFakeRows{cols: []string{"db", "server"}, rows: [][]driver.Value{{"app", c.server}}}, nil
	case q == d.(dialect.GuardFinder).GuardedTablesQuery():
		c.record("guarded")
		r := &serverFakeRows{cols: []string{"schema", "name"}}
		if t := c.f.guarded[c.server]; t != "" {
			r.rows = [][]driver.Value{{"app", t}}
		}
		return r, nil
	case q == d.SessionQuery():
		c.record("session")
		return &serverFakeRows{cols: []string{"s"}, rows: [][]driver.Value{{mysqldialect.SessionOK}}}, nil
	case q == cq:
		c.record("columns")
		r := &serverFakeRows{cols: []string{"name", "notnull"}}
		for _, col := range goodColumns {
			name, nn, _ := strings.Cut(col, ":")
			r.rows = append(r.rows, []driver.Value{name, nn})
		}
		return r, nil
	case q == d.(dialect.Registrar).RegistryExistsQuery():
		c.record("registry")
		return &serverFakeRows{cols: []string{"n"}, rows: [][]driver.Value{{int64(0)}}}, nil
	}
	c.record("other")
	return &serverFakeRows{cols: []string{"x"}}, nil
}

func (c *serverFakeConn) record(kind string) {
	c.f.mu.Lock()
	c.f.queries = append(c.f.queries, c.server+" "+kind)
	c.f.mu.Unlock()
}

type serverFakeRows struct {
	cols []string
	rows [][]driver.Value
}

func (r *serverFakeRows) Columns() []string { return r.cols }
func (r *serverFakeRows) Close() error      { return nil }
func (r *serverFakeRows) Next(dest []driver.Value) error {
	if len(r.rows) == 0 {
		return io.EOF
	}
	copy(dest, r.rows[0])
	r.rows = r.rows[1:]
	return nil
}

// kinds returns the kinds of queries in q that ran on server.
func kinds(q []string, server string) []string {
	var out []string
	for _, s := range q {
		if srv, kind, _ := strings.Cut(s, " "); srv == server {
			out = append(out, strings.Fields(kind)[0])
		}
	}
	return out
}

func has(list []string, kind string) bool {
	for _, k := range list {
		if k == kind {
			return true
		}
	}
	return false
}

// TestServerChangeDropsVerdicts: a running pool whose new connections reach another
// server (a failover moved the DSN: dialect.ServerIdentifier) does not trust the lazy
// check's verdict made on the old one (WithSchemaRecheck's default, one minute): the
// first guarded write on the new server reads the records again and checks the table
// again there before it is sent, and so does a write on a connection to the old
// server after that (two servers: each change re-checks). A new connection to the
// server the verdicts were made on adds no query: the identity comes with the name
// resolution the connection reads anyway.
func TestServerChangeDropsVerdicts(t *testing.T) {
	f := &serverFake{server: "A"}
	db := fencedsql.OpenDB(f, fencedsql.WithDialect(mysqldialect.Dialect), fencedsql.Guard("accounts"))
	defer db.Close()
	ctx := context.Background()
	conn := func() *sql.Conn {
		t.Helper()
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	write := func(c *sql.Conn) {
		t.Helper()
		if _, err := c.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
	}
	c1 := conn()
	write(c1)
	f.take()

	write(conn())
	same := kinds(f.take(), "A")
	if want := []string{"session", "other", "namepath", "exec"}; strings.Join(same, " ") != strings.Join(want, " ") {
		t.Errorf("a new connection to the same server ran %q, want %q (no query added, the verdict trusted)", same, want)
	}

	f.moveTo("B")
	write(conn())
	moved := kinds(f.take(), "B")
	if !has(moved, "registry") || !has(moved, "guarded") || !has(moved, "columns") || moved[len(moved)-1] != "exec" {
		t.Errorf("the first write on a connection to another server ran %q: want the records read again and the table checked there before the write", moved)
	}

	write(c1) // the old server's connection, still in the pool
	back := kinds(f.take(), "A")
	if !has(back, "registry") || !has(back, "columns") {
		t.Errorf("a write on a connection to the first server after the change ran %q: want the records and the table checked again", back)
	}
}

// TestServerChangeRecordsUnguardedStopsPool: a server reached after a change that
// records as guarded a table the running pool does not guard (its rewriter cannot
// grow) stops the pool's writes with a *SchemaError, as an unguarded relative does.
func TestServerChangeRecordsUnguardedStopsPool(t *testing.T) {
	f := &serverFake{server: "A", guarded: map[string]string{"B": "ledger"}}
	db := fencedsql.OpenDB(f, fencedsql.WithDialect(mysqldialect.Dialect), fencedsql.Guard("accounts"))
	defer db.Close()
	db.SetMaxIdleConns(0) // every Conn a new connection
	ctx := fencedsql.WithToken(context.Background(), 5)
	if _, err := db.ExecContext(ctx, "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	f.moveTo("B")
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 2; i++ {
		_, err = c.ExecContext(ctx, "UPDATE accounts SET balance = 1 WHERE id = 1")
		var se *fencedsql.SchemaError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "ledger") {
			t.Fatalf("write %d on the server that records ledger as guarded: %v, want a *SchemaError naming ledger", i, err)
		}
	}
}

// TestServerIdentityUnknownTolerated: a name resolution query answered with one column
// (a mock written for the earlier query) leaves the server unknown: the pool keeps its
// verdicts as before, and reads nothing more.
func TestServerIdentityUnknownTolerated(t *testing.T) {
	f := &serverFake{server: "A", oneColumn: true}
	db := fencedsql.OpenDB(f, fencedsql.WithDialect(mysqldialect.Dialect), fencedsql.Guard("accounts"))
	defer db.Close()
	ctx := context.Background()
	c1, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if _, err := c1.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	f.take()
	f.moveTo("B")
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if got := kinds(f.take(), "B"); has(got, "registry") || has(got, "columns") {
		t.Errorf("with the identity unknown the pool read %q", got)
	}
}
