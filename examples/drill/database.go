package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"
	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// backend says how to reach one kind of database with and without fencing.
type backend struct {
	raw, fenced string // database/sql driver names
	numbered    bool   // $n placeholders instead of ?
	forUpdate   bool   // SELECT … FOR UPDATE exists (not on SQLite)

	// For fencedsql.OpenDB (used with -metrics, to pass a MeterProvider): the plain
	// driver and the dialect the fenced name stands for.
	driver  func() driver.Driver
	dialect dialect.Dialect
}

var backends = map[string]backend{
	"sqlite": {raw: "sqlite", fenced: "fenced-sqlite",
		driver: func() driver.Driver { return &msqlite.Driver{} }, dialect: sqlite.Dialect},
	"postgres": {raw: "pgx", fenced: "fenced-pgx", numbered: true, forUpdate: true,
		driver: stdlib.GetDefaultDriver, dialect: postgres.Dialect},
	"mysql": {raw: "mysql", fenced: "fenced-mysql", forUpdate: true,
		driver: func() driver.Driver { return &gomysql.MySQLDriver{} }, dialect: mysql.Dialect},
}

var driverAliases = map[string]string{
	"sqlite": "sqlite", "sqlite3": "sqlite",
	"postgres": "postgres", "postgresql": "postgres", "pgx": "postgres", "pg": "postgres",
	"mysql": "mysql", "mariadb": "mysql",
}

// sqliteDSN is a modernc.org/sqlite DSN for the file at path: WAL, writers wait for
// each other (busy_timeout) and take the write lock at BEGIN (_txlock=immediate), so
// concurrent transactions queue instead of failing with SQLITE_BUSY. synchronous stays
// FULL: with WAL, NORMAL loses acknowledged commits at a power loss, and the fenced
// pool refuses it (red-team rt43b F2).
func sqliteDSN(path string) string {
	return "file:" + (&url.URL{Path: filepath.ToSlash(path)}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
}

// addParam adds name=value to dsn's parameters: after a '?' list (URLs, SQLite file:
// URIs, go-sql-driver/mysql DSNs), or as one more keyword of PostgreSQL's
// keyword/value form.
func addParam(driver, dsn, kv string) string {
	switch {
	case driver == "postgres" && !strings.Contains(dsn, "://"):
		return dsn + " " + kv
	case strings.Contains(dsn, "?"):
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}

// statements is the SQL of one run, for one table and placeholder style.
type statements struct {
	create, seed, drop, balance string
	stamp, read, update         string
}

func newStatements(table string, b backend) statements {
	ph := "?"
	if b.numbered {
		ph = "$1"
	}
	q := statements{
		create: "CREATE TABLE " + table + " (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, " +
			"fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed:    "INSERT INTO " + table + " (id, balance) VALUES (1, 0)",
		drop:    "DROP TABLE " + table,
		balance: "SELECT balance FROM " + table + " WHERE id = 1",
		update:  "UPDATE " + table + " SET balance = " + ph + " WHERE id = 1",
	}
	if b.forUpdate {
		// The locking read claims the row: through the fenced driver, in a transaction
		// bound to the holder's token, SELECT … FOR UPDATE stamps the token on the rows
		// it locks before returning them (see the package comment).
		q.read = "SELECT balance FROM " + table + " WHERE id = 1 FOR UPDATE"
		return q
	}
	// SQLite has no FOR UPDATE. The stamp: a no-op write that, through the fenced
	// driver, records the holder's token on the row before it reads.
	q.stamp = "UPDATE " + table + " SET balance = balance WHERE id = 1"
	q.read = "SELECT balance FROM " + table + " WHERE id = 1"
	return q
}

// accountTable is a run's table, reached through the plain driver: created and seeded
// before the run, read for the final balance after it, then dropped.
type accountTable struct {
	name  string
	q     statements
	admin *sql.DB
}

// setUpTable connects to the database at in.adminDSN through the plain driver, then
// creates and seeds the run's table.
func setUpTable(ctx context.Context, in runInput) (*accountTable, error) {
	admin, err := sql.Open(in.backend.raw, in.adminDSN)
	if err != nil {
		return nil, err
	}
	t := &accountTable{name: in.cfg.Table, q: newStatements(in.cfg.Table, in.backend), admin: admin}
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := admin.PingContext(setupCtx); err != nil {
		admin.Close()
		return nil, fmt.Errorf("connecting to the %s database: %w", in.cfg.Driver, err)
	}
	if _, err := admin.ExecContext(setupCtx, t.q.create); err != nil {
		admin.Close()
		return nil, fmt.Errorf("creating table %s (the drill creates and drops its own table: if one is left over "+
			"from an interrupted run, drop it or choose another -table): %w", t.name, err)
	}
	if _, err := admin.ExecContext(setupCtx, t.q.seed); err != nil {
		_ = t.drop(ctx) // the seeding error is the one to report
		return nil, fmt.Errorf("seeding table %s: %w", t.name, err)
	}
	return t, nil
}

// balance reads the final balance.
func (t *accountTable) balance(ctx context.Context) (int64, error) {
	var final int64
	if err := t.admin.QueryRowContext(ctx, t.q.balance).Scan(&final); err != nil {
		return 0, fmt.Errorf("reading the final balance: %w", err)
	}
	return final, nil
}

// drop drops the table, even once ctx is cancelled, and closes the connection.
func (t *accountTable) drop(ctx context.Context) error {
	defer t.admin.Close()
	dropCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := t.admin.ExecContext(dropCtx, t.q.drop); err != nil {
		return fmt.Errorf("dropping table %s: %w", t.name, err)
	}
	return nil
}

// openWorkloadDB opens the database the workers go through: in.driverName at in.dsn,
// or, for the fenced run with in.meters, the fenced driver built around the plain one,
// which records its metrics there.
func openWorkloadDB(in runInput) (*sql.DB, error) {
	be, cfg := in.backend, in.cfg
	var db *sql.DB
	if in.meters != nil && in.driverName == be.fenced {
		// The registered name cannot take a MeterProvider: wrap the plain driver with
		// the same dialect and guard, plus the provider.
		db = fencedsql.OpenDB(fencedsql.DSNConnector(be.driver(), in.adminDSN),
			fencedsql.WithDialect(be.dialect), fencedsql.Guard(cfg.Table), fencedsql.WithMeterProvider(in.meters))
	} else {
		var err error
		if db, err = sql.Open(in.driverName, in.dsn); err != nil {
			return nil, err
		}
	}
	db.SetMaxOpenConns(cfg.Workers + 2)
	db.SetMaxIdleConns(cfg.Workers + 2)
	return db, nil
}
