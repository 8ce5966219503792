package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// sqlLocks is a lease table (sqllock) in a PostgreSQL or MySQL/MariaDB database: the
// drill's own database, or -lock-dsn's. Each run creates the table <table>_locks (and
// the token sequence, counter table or procedure next to it) and drops it at the end.
type sqlLocks struct {
	driver  string // "pgx" or "mysql"
	dialect sqllock.Dialect
	dsn     string
	target  string // host:port of the server
	table   string
	admin   *sql.DB // direct, for the DDL
}

// lockDSN returns the DSN of the database that holds the lease table, and its driver.
func (c *config) lockDSN() (dsn, driver string, err error) {
	if c.LockDSN == "" {
		switch c.Driver {
		case "postgres":
			return c.DSN, "pgx", nil
		case "mysql":
			return c.DSN, "mysql", nil
		}
		return "", "", errors.New("-locks sql keeps its lease table in a PostgreSQL or MySQL/MariaDB database: " +
			"use -driver postgres or mysql, or give -lock-dsn")
	}
	d := c.LockDSN
	switch {
	case strings.HasPrefix(d, "postgres://"), strings.HasPrefix(d, "postgresql://"):
		return d, "pgx", nil
	case strings.Contains(d, "@tcp("), strings.Contains(d, "@unix("), strings.Contains(d, "@/"):
		return d, "mysql", nil
	case strings.Contains(d, "="):
		return d, "pgx", nil // PostgreSQL keyword/value
	}
	return "", "", fmt.Errorf("-lock-dsn: want a pgx URL (postgres://...), PostgreSQL keyword/value DSN or go-sql-driver/mysql DSN (user:pass@tcp(host:port)/db)")
}

// lockTable is the lease table's name for -table t.
func lockTable(t string) string { return t + "_locks" }

func openSQLLocks(ctx context.Context, cfg config, name string) (lockService, error) {
	dsn, driver, err := cfg.lockDSN()
	if err != nil {
		return nil, err
	}
	s := &sqlLocks{driver: driver, dialect: sqllock.Postgres, dsn: dsn, table: lockTable(cfg.Table)}
	if driver == "mysql" {
		s.dialect = sqllock.MySQL
	}
	if s.target, err = sqlTarget(driver, dsn); err != nil {
		return nil, err
	}
	if s.admin, err = sql.Open(driver, dsn); err != nil {
		return nil, err
	}
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.admin.PingContext(setupCtx); err != nil {
		s.admin.Close()
		return nil, fmt.Errorf("connecting to the lease table's database: %w", err)
	}
	if err := sqllock.CreateTable(setupCtx, s.admin, s.dialect, s.table); err != nil {
		s.admin.Close()
		return nil, fmt.Errorf("creating the lease table %s: %w", s.table, err)
	}
	return s, nil
}

// sqlTarget returns the host:port that dsn connects to; the proxies forward there.
func sqlTarget(driver, dsn string) (string, error) {
	if driver == "pgx" {
		pgCfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return "", fmt.Errorf("lease table DSN: %w", err)
		}
		if strings.HasPrefix(pgCfg.Host, "/") {
			return "", errors.New("lease table DSN: the drill needs a TCP connection (host:port), not a Unix socket, to cut it")
		}
		return net.JoinHostPort(pgCfg.Host, strconv.Itoa(int(pgCfg.Port))), nil
	}
	mysqlCfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("lease table DSN: %w", err)
	}
	if mysqlCfg.Net != "tcp" {
		return "", errors.New("lease table DSN: the drill needs a TCP connection (tcp(host:port)), not a Unix socket, to cut it")
	}
	return mysqlCfg.Addr, nil
}

// via returns the DSN with its server address replaced by addr (a proxy).
func (s *sqlLocks) via(addr string) (string, error) {
	if s.driver == "mysql" {
		mysqlCfg, err := gomysql.ParseDSN(s.dsn)
		if err != nil {
			return "", err
		}
		mysqlCfg.Addr = addr
		mysqlCfg.Timeout = 2 * time.Second
		return mysqlCfg.FormatDSN(), nil
	}
	if strings.HasPrefix(s.dsn, "postgres://") || strings.HasPrefix(s.dsn, "postgresql://") {
		u, err := url.Parse(s.dsn)
		if err != nil {
			return "", err
		}
		u.Host = addr
		q := u.Query()
		q.Set("connect_timeout", "2")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	host, port, _ := net.SplitHostPort(addr)
	return s.dsn + " host=" + host + " port=" + port + " connect_timeout=2", nil // keyword/value: later wins
}

func (s *sqlLocks) worker(_ int, _ string) (workerLocks, error) {
	ps, err := newProxies([]string{s.target})
	if err != nil {
		return workerLocks{}, err
	}
	dsn, err := s.via(ps[0].Addr())
	if err != nil {
		ps.close()
		return workerLocks{}, err
	}
	db, err := sql.Open(s.driver, dsn)
	if err != nil {
		ps.close()
		return workerLocks{}, err
	}
	// A worker holds one lease at a time: its grant or release, a renewal and (PostgreSQL)
	// the LISTEN connection of Wait.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	backend, err := sqllock.New(db, sqllock.WithDialect(s.dialect), sqllock.WithTable(s.table))
	if err != nil {
		db.Close()
		ps.close()
		return workerLocks{}, err
	}
	return workerLocks{backend: backend, faults: ps, close: func() {
		db.Close()
		ps.close()
	}}, nil
}

func (s *sqlLocks) lastToken() uint64 { return 0 }

// close drops the lease table and what CreateTable made next to it.
func (s *sqlLocks) close(ctx context.Context) error {
	defer s.admin.Close()
	dropCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	stmts, err := sqllock.DropDDL(s.dialect, s.table)
	if err != nil {
		return err
	}
	var errs []error
	for _, stmt := range stmts {
		if _, err := s.admin.ExecContext(dropCtx, stmt); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dropping the lease table %s: %w", s.table, err)
	}
	return nil
}
