// The fenced_* DSN parameters: removed before the driver sees the DSN, all else kept byte for byte.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"strings"
	"testing"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ---- DSN handling ----

// dsnDialect is the dialect whose driver reads dsn's syntax: go-sql-driver/mysql's
// user:pw@tcp(…)/db, SQLite's file: URIs, else PostgreSQL's.
func dsnDialect(dsn string) dialect.Dialect {
	switch {
	case strings.Contains(dsn, "@tcp("):
		return mysqldialect.Dialect
	case strings.HasPrefix(dsn, "file:"):
		return sqlite.Dialect
	}
	return postgres.Dialect
}

func TestDSNFencedParamsRemoved(t *testing.T) {
	cases := []struct {
		name, dsn, clean string
	}{
		{"url", "postgres://u:secret@h/db?sslmode=disable&fenced_tables=a,b", "postgres://u:secret@h/db?sslmode=disable"},
		{"url, ours first", "postgres://u:secret@h/db?fenced_tables=a,b&sslmode=disable", "postgres://u:secret@h/db?sslmode=disable"},
		{"url, only ours", "postgres://u:secret@h/db?fenced_tables=a,b", "postgres://u:secret@h/db"},
		{"mysql", "u:pw@tcp(h:3306)/db?parseTime=true&fenced_tables=a,b", "u:pw@tcp(h:3306)/db?parseTime=true"},
		{"sqlite file URI", "file:shop.db?fenced_tables=a,b&_pragma=busy_timeout(5000)", "file:shop.db?_pragma=busy_timeout(5000)"},
		{"key/value", "host=h fenced_tables=a,b user=u", "host=h user=u"},
		{"key/value, ours last", "host=h user=u password=secret fenced_tables=a,b", "host=h user=u password=secret"},
		{"several of ours", "postgres://h/db?fenced_tables=a,b&fenced_strict=true&fenced_schema_check=false&x=1", "postgres://h/db?x=1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := newFakeRec()
			name := registerFake(t, &fakeDriver{rec: rec, full: true}, fencedsql.WithDialect(dsnDialect(c.dsn)), fencedsql.WithSchemaCheck(false))
			db, err := sql.Open(name, c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Ping(); err != nil {
				t.Fatal(err)
			}
			if got := rec.lastDSN(); got != c.clean {
				t.Errorf("the wrapped driver was opened with %q, want %q", got, c.clean)
			}
			// The tables named in the DSN are guarded.
			for _, q := range []string{"UPDATE a SET x = 1", "DELETE FROM b WHERE id = 1", "INSERT INTO a (x) VALUES (1)"} {
				if _, err := db.Exec(q); !errors.Is(err, fencedsql.ErrNoToken) {
					t.Errorf("%s: err = %v, want ErrNoToken", q, err)
				}
			}
			if _, err := db.Exec("UPDATE c SET x = 1"); err != nil {
				t.Errorf("unguarded table: %v", err)
			}
		})
	}
}

// DSNs without parameters of ours reach the driver unchanged, byte for byte.
func TestDSNUntouched(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:secret@h/db?sslmode=disable",
		"u:pw@tcp(h:3306)/db?parseTime=true",
		"host=h   user=u password='a  b'",
		"host=h password=ab?c&d",
		"file:shop.db",
		"",
	} {
		rec := newFakeRec()
		name := registerFake(t, &fakeDriver{rec: rec})
		db, err := sql.Open(name, dsn)
		if err != nil {
			t.Fatalf("%q: %v", dsn, err)
		}
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		if got := rec.lastDSN(); got != dsn {
			t.Errorf("opened with %q, want %q", got, dsn)
		}
		db.Close()
	}
}

// "Bytes that are not ours are kept as they are" (dsn.go): also in the key/value form,
// where values may be quoted and may contain '?'.
func TestDSNKeyValueOtherBytesKept(t *testing.T) {
	cases := []struct{ dsn, clean string }{
		{"host=h password='a  b' fenced_tables=a", "host=h password='a  b'"},
		{"host=h password=ab?c fenced_tables=a", "host=h password=ab?c"},
	}
	for _, c := range cases {
		rec := newFakeRec()
		name := registerFake(t, &fakeDriver{rec: rec}, fencedsql.WithSchemaCheck(false))
		db, err := sql.Open(name, c.dsn)
		if err != nil {
			t.Errorf("%q: %v", c.dsn, err)
			continue
		}
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		if got := rec.lastDSN(); got != c.clean {
			t.Errorf("DSN %q reached the driver as %q, want %q", c.dsn, got, c.clean)
		}
		if _, err := db.Exec("UPDATE a SET x = 1"); !errors.Is(err, fencedsql.ErrNoToken) {
			t.Errorf("DSN %q: table a not guarded (err = %v)", c.dsn, err)
		}
		db.Close()
	}
}

func TestDSNErrors(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:secret@h/db?sslmode=disable&fenced_foo=1",
		"u:secret@tcp(h:3306)/db?fenced_foo=1",
		"host=h password=secret fenced_foo=1",
		"postgres://u:secret@h/db?fenced_strict=perhaps",
		"postgres://u:secret@h/db?fenced_tables=a%20b",
		"postgres://u:secret@h/db?fenced_tables=a&fenced_token_column=x%22y",
	} {
		rec := newFakeRec()
		name := registerFake(t, &fakeDriver{rec: rec}, fencedsql.WithDialect(dsnDialect(dsn)))
		db, err := sql.Open(name, dsn)
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		var ce *fencedsql.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%q: err = %v, want *ConfigError", dsn, err)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error quotes the password: %v", dsn, err)
		}
		if len(rec.dsns) != 0 {
			t.Errorf("%q: the wrapped driver was opened", dsn)
		}
	}
}

// fenced_token_column, fenced_version_column, fenced_strict and fenced_schema_check
// apply to the DSN's tables.
func TestDSNOptions(t *testing.T) {
	rec := newFakeRec()
	name := registerFake(t, &fakeDriver{rec: rec, full: true})
	db, err := sql.Open(name, "postgres://h/db?fenced_tables=jobs&fenced_token_column=ft&fenced_version_column=ver&fenced_strict=true&fenced_schema_check=false")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), `UPDATE jobs SET state = $1`, "done"); err != nil {
		t.Fatal(err)
	}
	got := rec.lastExec()
	want := fakeCall{`UPDATE jobs SET state = $1, "ver" = "ver" + 1, "ft" = CASE WHEN "ft" < $2 THEN $2::bigint ELSE NULL END`, []any{"done", int64(5)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sent %+v\nwant %+v", got, want)
	}
	// With the check off the pool still reads what the database records as guarded
	// (the fake answers none), and nothing else: no column check.
	records := map[string]bool{
		postgres.Dialect.(dialect.Registrar).RegistryExistsQuery():  true,
		postgres.Dialect.(dialect.GuardFinder).GuardedTablesQuery(): true,
	}
	// and the relations through which a write reaches a system catalog
	cv, _ := postgres.Dialect.(dialect.CatalogViewFinder).CatalogViewsQuery()
	records[cv] = true
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, q := range rec.queries {
		if !records[q.sql] && !strings.Contains(q.sql, "pg_inherits") && !strings.HasPrefix(q.sql, dialect.RegistryRowsQueryOf("")) {
			t.Errorf("schema check ran although fenced_schema_check=false: %s", q.sql)
		}
	}
}
