package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Under lower_case_table_names = 0 database names are case-sensitive too: `T_X`.acc
// next to t_x.acc is another database's table. Its derived guard keeps the
// qualifier's spelling, so the lazy check judges the table the server resolves to: a
// twin with a nullable token column is refused with ErrSchema (nothing written), also
// after t_x.acc was checked; t_x.acc itself is still fenced.
func TestDatabaseCaseTwinChecked(t *testing.T) {
	for _, qualified := range []bool{false, true} {
		t.Run(map[bool]string{false: "unqualified", true: "qualified"}[qualified], func(t *testing.T) {
			dsn := testdb.MySQL(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			lower := cfg.DBName
			upper := strings.ToUpper(lower)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			raw := testdb.Open(t, "mysql", dsn)
			var lcn int
			if err := raw.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&lcn); err != nil {
				t.Fatal(err)
			}
			if lcn != 0 {
				t.Fatalf("lower_case_table_names = %d: this test needs a case-sensitive server (scripts/servers.sh starts one)", lcn)
			}
			t.Cleanup(func() {
				c, err := sql.Open("mysql", dsn)
				if err != nil {
					return
				}
				defer c.Close()
				_, _ = c.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+upper+"`")
			})
			for _, q := range []string{
				"CREATE DATABASE `" + upper + "`",
				"CREATE TABLE `" + lower + "`.acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"CREATE TABLE `" + upper + "`.acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NULL DEFAULT 0, version BIGINT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO `" + lower + "`.acc (id, fence_token) VALUES (1, 10)",
				"INSERT INTO `" + upper + "`.acc (id, fence_token) VALUES (1, 10)",
			} {
				if _, err := raw.ExecContext(ctx, q); err != nil {
					t.Fatal(q, err)
				}
			}
			guard := "acc"
			if qualified {
				guard = lower + ".acc"
			}
			db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables="+guard))
			db.SetMaxOpenConns(1)
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE `"+lower+"`.acc SET balance = 1 WHERE id = 1"); err != nil {
				t.Fatalf("fresh UPDATE of %s.acc: %v", lower, err)
			}
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE `"+upper+"`.acc SET balance = 666 WHERE id = 1")
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("stale UPDATE %s.acc: %v; want ErrSchema", upper, err)
			}
			var tok sql.NullInt64
			var bal int64
			if qerr := raw.QueryRowContext(ctx, "SELECT fence_token, balance FROM `"+upper+"`.acc WHERE id = 1").Scan(&tok, &bal); qerr != nil {
				t.Fatal(qerr)
			}
			if bal != 0 || !tok.Valid || tok.Int64 != 10 {
				t.Errorf("%s.acc row: token %v balance %d; want it unchanged (10, 0)", upper, tok, bal)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE `"+lower+"`.acc SET balance = 2 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("stale UPDATE %s.acc: %v; want ErrFenced", lower, err)
			}
			if qerr := raw.QueryRowContext(ctx, "SELECT fence_token, balance FROM `"+lower+"`.acc WHERE id = 1").Scan(&tok, &bal); qerr != nil {
				t.Fatal(qerr)
			}
			if bal != 1 || !tok.Valid || tok.Int64 != 20 {
				t.Errorf("%s.acc row: token %v balance %d; want 20, 1", lower, tok, bal)
			}
		})
	}
}

// MariaDB with lower_case_table_names = 0 and a non-ASCII letter: `CAFÉ` next to the
// guarded café is another table (table names are file names, compared exactly). The
// planner's MySQL key folds every letter, and the derived guard keeps the written
// spelling, so the lazy check judges CAFÉ itself: nullable token column, ErrSchema.
func TestNonASCIICaseTwinChecked(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE café (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE CAFÉ (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NULL DEFAULT 0, version BIGINT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO CAFÉ (id, fence_token) VALUES (1, 10)",
		"INSERT INTO café (id, fence_token) VALUES (1, 10)",
	)
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=café"))
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE café SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatalf("fresh UPDATE café: %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE CAFÉ SET balance = 666 WHERE id = 1"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("stale UPDATE CAFÉ: %v; want ErrSchema", err)
	}
	var tok sql.NullInt64
	var bal int64
	if qerr := raw.QueryRowContext(ctx, "SELECT fence_token, balance FROM CAFÉ WHERE id = 1").Scan(&tok, &bal); qerr != nil {
		t.Fatal(qerr)
	}
	if bal != 0 || !tok.Valid || tok.Int64 != 10 {
		t.Errorf("CAFÉ row: token %v balance %d; want it unchanged (10, 0)", tok, bal)
	}
}
