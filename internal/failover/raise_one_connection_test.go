package failover

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// switchConnector opens its first connection to first and every later one to rest:
// a VIP or DNS name moved between two connections of one pool (the failover moment), a
// round-robin proxy, or a multi-host address.
type switchConnector struct {
	drv         driver.Driver
	first, rest string
	k           int64 // connections to first
	n           atomic.Int64
}

func (c *switchConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if c.n.Add(1) <= c.k {
		return c.drv.Open(c.first)
	}
	return c.drv.Open(c.rest)
}
func (c *switchConnector) Driver() driver.Driver { return c.drv }

// TestRaiseTokenFloorOneConnection (red-team rt50c F4): schema.RaiseTokenFloor judges
// the server, raises, settles and checks coverage on one connection, inside the raise's
// transaction for the judgement, as MaxToken does. Its pool's connections reach
// different servers (the hook's DSN names a VIP or DNS name that moves at the failover,
// a proxy; no idle connection kept): a check on one connection and a raise on another
// landed the raise on a MariaDB replica (read_only off, MariaDB's default) and
// returned nil while the primary's floor was unchanged. Now the raise reaches the
// server judged: the primary when the first connection does (k ≥ 1), and a refusal
// (ErrNotPrimary) when every connection reaches the replica (k = 0).
func TestRaiseTokenFloorOneConnection(t *testing.T) {
	env := needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pair := asyncMariaDBPair(t, ctx, env)
	primary, err := sql.Open("mysql", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	logicalExec(t, ctx, primary, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	if err := schema.RegisterTables(ctx, primary, mysql.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil {
		t.Fatal(err)
	}
	reports, err := schema.Check(ctx, primary, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		logicalExec(t, ctx, primary, r.Fix...)
	}
	logicalExec(t, ctx, primary, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 10, 1)")
	replica, err := sql.Open("mysql", pair.replica.dsn(mariaDBDatabase))
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	if err := waitFor(ctx, "row 1 on the replica", nil, func(ctx context.Context) error {
		var n int
		if err := replica.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%d rows", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	logicalExec(t, ctx, replica, "SET GLOBAL read_only = OFF") // MariaDB's default; the harness's own server
	// The pool's connections reach the primary until the k-th, the replica after it
	// (the VIP moved at that moment).
	for k := int64(0); k <= 4; k++ {
		floor := uint64(1000 * (k + 1))
		hook := sql.OpenDB(&switchConnector{drv: primary.Driver(), first: pair.DSN(), rest: pair.replica.dsn(mariaDBDatabase), k: k})
		hook.SetMaxIdleConns(0)
		err := schema.RaiseTokenFloor(ctx, hook, mysql.Dialect, floor)
		hook.Close()
		var pf, rf int64
		_ = primary.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor").Scan(&pf)
		_ = replica.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor").Scan(&rf)
		t.Logf("k=%d: RaiseTokenFloor(%d): %v; primary floor %d, replica floor %d", k, floor, err, pf, rf)
		switch {
		case k == 0 && !errors.Is(err, schema.ErrNotPrimary):
			t.Errorf("k=0: RaiseTokenFloor(%d) with every connection on the replica: %v, want ErrNotPrimary", floor, err)
		case k > 0 && (err != nil || uint64(pf) < floor):
			t.Errorf("k=%d: RaiseTokenFloor(%d): %v, and the primary's floor is %d (the replica's %d): want the raise on the "+
				"connection whose server was judged a primary", k, floor, err, pf, rf)
		}
	}
}
