package sqlite_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// hookConnector opens every connection with dsn and runs first on the first one and
// later on every later one: a connection hook that does not do the same on every
// connection of the pool (or was changed while the pool ran).
type hookConnector struct {
	d            driver.Driver
	dsn          string
	first, later string
	n            atomic.Int64
}

func (c *hookConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	stmt := c.later
	if c.n.Add(1) == 1 {
		stmt = c.first
	}
	if stmt != "" {
		if _, err := conn.(driver.ExecerContext).ExecContext(ctx, stmt, nil); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

func (c *hookConnector) Driver() driver.Driver { return c.d }

// A connection whose hook ATTACHes another file under the alias, or makes a TEMP table
// of the guarded name, resolves the guarded name otherwise than the connection the
// pool's verdict was made on: it is checked on its own (docs/design.md G13, red-team
// rt40b F2), and a stale write to a table with nullable fencing columns is refused.
func TestPerConnectionHookNamesRechecked(t *testing.T) {
	fit := "(id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	unfit := "(id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT, version BIGINT)"
	for _, c := range []struct {
		name string
		// setup makes the tables in dir; later is the hook's statement on the later
		// connections; attach: the hook ATTACHes a.db as aux on the first connection
		// and b.db on the later ones instead.
		setup  func(t *testing.T, dir, dsn string)
		later  string
		attach bool
	}{
		{name: "attached", setup: func(t *testing.T, dir, _ string) {
			testdb.Open(t, "sqlite", "file:"+filepath.Join(dir, "a.db"), "CREATE TABLE np_acc "+fit, "INSERT INTO np_acc VALUES (1, 100, 20, 1)")
			testdb.Open(t, "sqlite", "file:"+filepath.Join(dir, "b.db"), "CREATE TABLE np_acc "+unfit, "INSERT INTO np_acc VALUES (1, 100, 20, 1)")
		}, attach: true},
		{name: "temp", setup: func(t *testing.T, _, dsn string) {
			testdb.Open(t, "sqlite", dsn, "CREATE TABLE np_acc "+fit, "INSERT INTO np_acc VALUES (1, 100, 20, 1)")
		}, later: "CREATE TEMP TABLE np_acc " + unfit + "; INSERT INTO temp.np_acc VALUES (1, 100, 20, 1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			dsn := "file:" + filepath.Join(dir, "main.db") + "?_pragma=busy_timeout(5000)"
			c.setup(t, dir, dsn)
			first, later := "", c.later
			if c.attach {
				first = "ATTACH DATABASE '" + filepath.Join(dir, "a.db") + "' AS aux"
				later = "ATTACH DATABASE '" + filepath.Join(dir, "b.db") + "' AS aux"
			}
			raw := testdb.Open(t, "sqlite", dsn)
			hc := &hookConnector{d: raw.Driver(), dsn: dsn, first: first, later: later}
			db := fencedsql.OpenDB(hc, fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("np_acc"))
			t.Cleanup(func() { db.Close() })
			db.SetMaxIdleConns(0) // every statement on a new connection
			ctx := context.Background()
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 30), "UPDATE np_acc SET balance = 101 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_, err = conn.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE np_acc SET balance = 666 WHERE id = 1")
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("stale write on a connection whose hook moved np_acc: err = %v, want ErrSchema", err)
			}
			var bal int64
			var tok sql.NullInt64
			// the table the connection resolves np_acc to, read on it without the wrapper
			if err := conn.Raw(func(dc any) error {
				rows, err := dc.(driver.QueryerContext).QueryContext(ctx, "SELECT balance, fence_token FROM np_acc WHERE id = 1", nil)
				if err != nil {
					return err
				}
				defer rows.Close()
				v := make([]driver.Value, 2)
				if err := rows.Next(v); err != nil {
					return err
				}
				bal = v[0].(int64)
				tok.Int64, tok.Valid = v[1].(int64)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if bal != 100 || !tok.Valid {
				t.Fatalf("the row is now balance %d, fence_token %v; want it unchanged", bal, tok)
			}
		})
	}
}
