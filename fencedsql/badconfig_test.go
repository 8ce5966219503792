// Bad configuration: unknown fenced_* DSN parameters and guarded names that are not plain identifiers.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/sqlite" // registers "fenced-sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// Configuration errors: an unknown fenced_* DSN parameter and guarded names that are
// not plain identifiers fail with *ConfigError — from sql.Open, or at the latest from
// the first use — and the message never contains the DSN's password.
func TestBadConfig(t *testing.T) {
	const secret = "s3cr3t-pw"
	dir := t.TempDir()
	file := "file:" + filepath.Join(dir, "c.db")
	dsns := []struct{ name, driver, dsn string }{
		{"pg url, unknown parameter", "fenced-pgx", "postgres://app:" + secret + "@127.0.0.1:1/shop?sslmode=disable&fenced_tabels=accounts"},
		{"pg key/value, unknown parameter", "fenced-pgx", "host=127.0.0.1 port=1 user=app password=" + secret + " fenced_bogus=1"},
		{"pg key/value, quoted password, unknown parameter", "fenced-pgx", "host=127.0.0.1 password='" + secret + " x' fenced_x=1"},
		{"mysql, unknown parameter", "fenced-mysql", "app:" + secret + "@tcp(127.0.0.1:1)/shop?fenced_tables=accounts&fenced_strikt=true"},
		{"sqlite, unknown parameter", "fenced-sqlite", file + "?fenced_tables=accounts&fenced_nope=1"},
		{"pg url, bad boolean", "fenced-pgx", "postgres://app:" + secret + "@127.0.0.1:1/shop?fenced_strict=maybe"},
		{"table name a;b", "fenced-sqlite", file + "?fenced_tables=a;b"},
		{"table name with a space", "fenced-pgx", "postgres://app:" + secret + "@127.0.0.1:1/shop?fenced_tables=a%20b"},
		{"table name with a quote", "fenced-mysql", "app:" + secret + "@tcp(127.0.0.1:1)/shop?fenced_tables=a%60b"},
		{"empty schema", "fenced-sqlite", file + "?fenced_tables=.accounts"},
		{"three-part name", "fenced-sqlite", file + "?fenced_tables=a.b.c"},
		{"bad token column", "fenced-pgx", "postgres://app:" + secret + "@127.0.0.1:1/shop?fenced_tables=a&fenced_token_column=x%22y"},
		{"token column equals version column", "fenced-sqlite", file + "?fenced_tables=a&fenced_token_column=version"},
	}
	for _, c := range dsns {
		t.Run(c.name, func(t *testing.T) {
			err := badOpenErr(t, c.driver, c.dsn)
			var ce *fencedsql.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *ConfigError", err, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error contains the DSN password: %v", err)
			}
		})
	}

	opts := []struct {
		name string
		opts []fencedsql.Option
	}{
		{`Guard("x y")`, []fencedsql.Option{fencedsql.Guard("x y")}},
		{`Guard("a;b")`, []fencedsql.Option{fencedsql.Guard("a;b")}},
		{`Guard("")`, []fencedsql.Option{fencedsql.Guard("")}},
		{`Guard("shop.")`, []fencedsql.Option{fencedsql.Guard("shop.")}},
		{`Guard("accounts\"")`, []fencedsql.Option{fencedsql.Guard(`accounts"`)}},
		{`TokenColumn("fence token")`, []fencedsql.Option{fencedsql.Guard("a", fencedsql.TokenColumn("fence token"))}},
		{`VersionColumn("")`, []fencedsql.Option{fencedsql.Guard("a", fencedsql.VersionColumn(""))}},
		{`TokenColumn = VersionColumn`, []fencedsql.Option{fencedsql.Guard("a", fencedsql.TokenColumn("v"), fencedsql.VersionColumn("V"))}},
		{`no dialect`, nil},
	}
	for _, c := range opts {
		t.Run(c.name, func(t *testing.T) {
			dsn := fmt.Sprintf("fencedsql-badcfg-%d", badMockSeq.Add(1))
			mdb, mock, err := sqlmock.NewWithDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer mdb.Close()
			all := c.opts
			if c.name != "no dialect" {
				all = append([]fencedsql.Option{fencedsql.WithDialect(sqlite.Dialect)}, c.opts...)
			}
			db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn), all...)
			defer db.Close()
			for _, use := range []func() error{
				db.Ping,
				func() error {
					_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 9), `SELECT 1`)
					return err
				},
			} {
				var ce *fencedsql.ConfigError
				if err := use(); !errors.As(err, &ce) {
					t.Errorf("err = %v (%T), want *ConfigError", err, err)
				}
			}
			if err := mock.ExpectationsWereMet(); err != nil {
				t.Error(err)
			}
		})
	}
}

// badOpenErr returns the error of sql.Open, or else of the first Ping.
func badOpenErr(t *testing.T, driverName, dsn string) error {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	return db.PingContext(ctx)
}
