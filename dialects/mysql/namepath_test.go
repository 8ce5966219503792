package mysql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"testing"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// laterConnector opens its first connection with first and every later one with later:
// connections of one pool that open in different default databases without a USE the
// pool sees (a proxy that picks the schema, init_connect changed while the pool runs).
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

// A connection the pool opens in another default database is checked on its own
// (docs/design.md G13, red-team rt40b F2): the pool's verdict on np_acc, made in the
// first database, does not cover the other database's np_acc, whose fencing columns
// are nullable; a stale write there is refused, not stored with the fencing NULL.
func TestPerConnectionDefaultDatabaseRechecked(t *testing.T) {
	dsnA, dsnB := testdb.MySQL(t), testdb.MySQL(t)
	rawA := testdb.Open(t, "mysql", dsnA,
		"CREATE TABLE np_acc (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO np_acc VALUES (1, 100, 20, 1)")
	rawB := testdb.Open(t, "mysql", dsnB,
		"CREATE TABLE np_acc (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT, version BIGINT)",
		"INSERT INTO np_acc VALUES (1, 100, 20, 1)")
	c := &laterConnector{d: rawA.Driver(), first: dsnA, later: dsnB}
	db := fencedsql.OpenDB(c, fencedsql.WithDialect(mysqldialect.Dialect), fencedsql.Guard("np_acc"))
	t.Cleanup(func() { db.Close() })
	db.SetMaxIdleConns(0) // every statement on a new connection
	ctx := context.Background()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 30), "UPDATE np_acc SET balance = 101 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE np_acc SET balance = 666 WHERE id = 1")
	var bal int64
	var tok sql.NullInt64
	if qerr := rawB.QueryRow("SELECT balance, fence_token FROM np_acc WHERE id = 1").Scan(&bal, &tok); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || bal != 100 || !tok.Valid {
		t.Fatalf("stale write on a connection opened in another database: err = %v; its np_acc now balance %d, fence_token %v; want ErrSchema and the row unchanged", err, bal, tok)
	}
}
