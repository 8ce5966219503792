package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"

	_ "github.com/fencedsql/fencedsql/dialects/mysql"
	_ "github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func ExampleUnwrap() {
	db, _ := sql.Open("fenced-pgx", "postgres://app@db/shop?fenced_tables=accounts")
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.Raw(func(driverConn any) error {
		// pgx's own connection: what is done on it is NOT fenced.
		pc := fencedsql.Unwrap(driverConn).(*stdlib.Conn).Conn()
		fmt.Println(pc.PgConn().ParameterStatus("server_version"))
		return nil
	})
}

// sql.Conn.Raw hands the callback the wrapper's connection; Unwrap reaches pgx's.
func TestUnwrapPostgres(t *testing.T) {
	db, err := sql.Open("fenced-pgx", pgParam(testdb.Postgres(t), "fenced_tables=g&fenced_allow=ddl"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, ok := fencedsql.UnwrapDriver(db.Driver()).(*stdlib.Driver); !ok {
		t.Errorf("UnwrapDriver(db.Driver()) = %T, want *stdlib.Driver", fencedsql.UnwrapDriver(db.Driver()))
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE g (id INT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Raw(func(dc any) error {
		if _, ok := dc.(*stdlib.Conn); ok {
			t.Error("Raw handed the callback pgx's connection itself: the wrapper is bypassed")
		}
		if r, ok := dc.(interface{ Raw() driver.Conn }); !ok {
			t.Error("the wrapper's connection has no Raw() driver.Conn")
		} else if _, ok := r.Raw().(*stdlib.Conn); !ok {
			t.Errorf("Raw() = %T", r.Raw())
		}
		sc, ok := fencedsql.Unwrap(dc).(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("Unwrap = %T, want *stdlib.Conn", fencedsql.Unwrap(dc))
		}
		if v := sc.Conn().PgConn().ParameterStatus("server_version"); v == "" {
			t.Error("no server_version through pgx's connection")
		}
		// What the doc warns about: a write on the raw connection is not fenced.
		if _, err := sc.Conn().Exec(ctx, `INSERT INTO g (id) VALUES (1)`); err != nil {
			t.Errorf("raw write: %v", err)
		}
		// Through the wrapper the same write without a token is refused.
		if _, err := dc.(driver.ExecerContext).ExecContext(ctx, `INSERT INTO g (id) VALUES (2)`, nil); !errors.Is(err, fencedsql.ErrNoToken) {
			t.Errorf("write through the wrapper's connection: %v, want ErrNoToken", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A value that is not a wrapper comes back unchanged.
	if got := fencedsql.Unwrap(42); got != 42 {
		t.Errorf("Unwrap(42) = %v", got)
	}
}

// go-sql-driver/mysql's README reads per-statement results of a multi-statement Exec
// through the legacy driver.Execer inside Raw: the wrapper forwards it (with the same
// rewrite and checks) and hands back the driver's own Result.
func TestLegacyExecerMySQL(t *testing.T) {
	db, err := sql.Open("fenced-mysql", testdb.MySQL(t)+"&multiStatements=true&fenced_tables=g&fenced_allow=ddl")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, q := range []string{ // the listed g first: until it exists the pool refuses writes
		`CREATE TABLE g (id INT PRIMARY KEY, x INT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE point (x INT, y INT)`,
		`INSERT INTO point VALUES (0, 2), (0, 3), (0, 3)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := fencedsql.UnwrapDriver(db.Driver()).(*mysql.MySQLDriver); !ok {
		t.Errorf("UnwrapDriver(db.Driver()) = %T", fencedsql.UnwrapDriver(db.Driver()))
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Raw(func(dc any) error {
		if got := fmt.Sprintf("%T", fencedsql.Unwrap(dc)); got != "*mysql.mysqlConn" {
			t.Errorf("Unwrap = %s", got)
		}
		ex, ok := dc.(driver.Execer) //nolint:staticcheck // what the mysql README does
		if !ok {
			return errors.New("the wrapper's connection is not a driver.Execer")
		}
		res, err := ex.Exec(`UPDATE point SET x = 1 WHERE y = 2; UPDATE point SET x = 2 WHERE y = 3;`, nil)
		if err != nil {
			return err
		}
		mr, ok := res.(mysql.Result)
		if !ok {
			return fmt.Errorf("result %T is not a mysql.Result", res)
		}
		if got := mr.AllRowsAffected(); fmt.Sprint(got) != "[1 2]" {
			t.Errorf("AllRowsAffected = %v, want [1 2]", got)
		}
		// The legacy Queryer too.
		rows, err := dc.(driver.Queryer).Query(`SELECT COUNT(*) FROM point WHERE x = 2`, nil) //nolint:staticcheck
		if err != nil {
			return err
		}
		dest := make([]driver.Value, 1)
		if err := rows.Next(dest); err != nil || fmt.Sprint(dest[0]) != "2" {
			t.Errorf("legacy Query: %v %v", dest[0], err)
		}
		rows.Close()
		// Same checks as every other path: a guarded write without a token is refused,
		// and with a statement form that cannot be fenced too.
		if _, err := ex.Exec(`INSERT INTO g (id) VALUES (1)`, nil); !errors.Is(err, fencedsql.ErrNoToken) {
			t.Errorf("guarded write through the legacy Execer without a token: %v, want ErrNoToken", err)
		}
		if _, err := ex.Exec(`UPDATE g SET x = 1; UPDATE g SET x = 2`, nil); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("multi-statement guarded write through the legacy Execer: %v, want ErrUnsupported", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// With a token bound by a transaction, the legacy Execer's guarded write is fenced.
	tx, err := c.BeginTx(fencedsql.WithToken(ctx, 9), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Raw(func(dc any) error {
		_, err := dc.(driver.Execer).Exec(`INSERT INTO g (id) VALUES (?)`, []driver.Value{int64(1)}) //nolint:staticcheck
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var tok int64
	if err := db.QueryRowContext(ctx, `SELECT fence_token FROM g WHERE id = 1`).Scan(&tok); err != nil || tok != 9 {
		t.Errorf("fence_token = %d (%v), want 9", tok, err)
	}
}
