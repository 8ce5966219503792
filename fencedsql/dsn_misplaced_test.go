// A parameter of this package written where no DSN reader takes it as one (red-team
// rt43b F1): refused with a *ConfigError on every DSN path, never quoting a password.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// misplacedDSNs are DSNs holding text that reads as a parameter of this package
// inside another parameter's value, after '#', after a '=' with no key, as a SQLite
// pragma, or in a path, in every DSN form; every one holds the password "secret" where
// its form has one.
var misplacedDSNs = []string{
	// SQLite file: URIs (the red-team's spellings and the class around them)
	"file:/p/t.db#fenced_tables=accounts",
	"file:/p/t.db?mode=rwc#fenced_tables=accounts",
	"file:/p/t.db?mode=rwc,fenced_tables=accounts",
	"file:/p/t.db?mode=rwc%26fenced_tables%3Daccounts",
	"file:/p/t.db?mode=rwc%2526fenced_tables%253Daccounts", // encoded twice
	"file:/p/t.db?=fenced_tables=accounts",
	"file:/p/t.db?_pragma=fenced_tables=accounts",
	"file:/p/t.db?_pragma=fenced_tables(accounts)",
	"file:/p/t.db?_pragma=busy_timeout(5000);fenced_strict=true",
	"file:/p/t.db?fenced_tables=orders&mode=rwc,fenced_tables=accounts",
	"file:/p/t.db?fenced_tables=orders#fenced_strict=true", // in the value of ours
	"file:/p/t.db?mode=rwc,FENCED-TABLES=accounts",
	"file:/p/t.db?mode=rwc,fencedtables=accounts",        // a near miss, in a value
	"file:/p/t.db?mode=rwc,fence_tables = accounts",      // a near miss, blanks
	"file:/p/fenced_tables=accounts/t.db?mode=rwc",       // in the path
	"file:/p/t.db?cache=shared,x.fenced_tables=accounts", // a dotted tail
	// PostgreSQL URL and keyword/value forms
	"postgres://u:secret@h/db?sslmode=disable&application_name=app%26fenced_tables%3Daccounts",
	"postgres://u:secret@h/db?application_name=app,fenced_tables=accounts",
	"postgres://u:secret@h/db?options=-c%20fenced.tables%3Daccounts",
	"postgres://u:secret@h/db?sslmode=disable#fenced_tables=accounts",
	"host=h password=secret application_name=app,fenced_tables=accounts",
	"host=h password=secret application_name='app fenced_tables = accounts'",
	"host=h password=secret options='-c x.fenced_tables=accounts'",
	// go-sql-driver/mysql
	"u:secret@tcp(h:3306)/db?parseTime=true&charset=utf8mb4,fenced_tables=accounts",
	"u:secret@tcp(h:3306)/db?collation=utf8mb4_general_ci%26fenced_tables%3Daccounts",
	"u:secret@tcp(h:3306)/db?loc=UTC#fenced_tables=accounts",
}

// TestDSNMisplacedParamRefused: each of misplacedDSNs is a *ConfigError at sql.Open
// (or first use) of a fenced driver name, and through OpenDB(DSNConnector); the driver
// is never opened, the error never quotes the password, and MisplacedDSNParam and
// DSNParam (the dialects' hook) see it too.
func TestDSNMisplacedParamRefused(t *testing.T) {
	for _, dsn := range misplacedDSNs {
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
		db = fencedsql.OpenDB(fencedsql.DSNConnector(&fakeDriver{rec: rec}, dsn), fencedsql.WithDialect(dsnDialect(dsn)))
		if err := db.PingContext(context.Background()); !errors.As(err, &ce) {
			t.Errorf("%q: OpenDB(DSNConnector): err = %v, want *ConfigError", dsn, err)
		}
		db.Close()
		if fencedsql.DSNParam(dsn) == "" {
			t.Errorf("%q: DSNParam = \"\"", dsn)
		}
	}
}

// TestDSNMisplacedParamSaysWhere: the refusal names the place — the key of the
// parameter whose value holds the text, the fragment, a key-less '=' — and not the
// password; a key that is part of the password is not named.
func TestDSNMisplacedParamSaysWhere(t *testing.T) {
	for _, c := range []struct{ dsn, want string }{
		{"file:/p/t.db?mode=rwc,fenced_tables=accounts", "in the value of the DSN's parameter mode"},
		{"file:/p/t.db?mode=rwc%26fenced_tables%3Daccounts", "in the value of the DSN's parameter mode"},
		{"file:/p/t.db?mode=rwc#fenced_tables=accounts", "after '#'"},
		{"file:/p/t.db?=fenced_tables=accounts", "without a key"},
		{"file:/srv/app/data/fenced_tables=a/t.db?mode=rwc", "before the DSN's parameters"},
		{"host=h password=secret application_name=app,fenced_tables=accounts", "in the value of the DSN's parameter application_name"},
		{"u:secret@tcp(h:3306)/db?charset=utf8mb4,fenced_tables=accounts", "in the value of the DSN's parameter charset"},
		// The password holds a "key": it is not named.
		{"postgres://u:p?charset=x@h/db?charset=x,fenced_tables=a", "in the value of"},
	} {
		err := fencedsql.MisplacedDSNParam(c.dsn)
		var ce *fencedsql.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), fencedsql.ParamTables) {
			t.Errorf("%q: err = %v, want a *ConfigError naming %s %q", c.dsn, err, fencedsql.ParamTables, c.want)
		}
	}
	err := fencedsql.MisplacedDSNParam("postgres://u:pw,charset@h/db?charset=x,fenced_tables=a")
	if err == nil || strings.Contains(err.Error(), "charset") {
		t.Errorf("a key that is part of the password: err = %v, want a refusal that does not name the key", err)
	}
	if err := fencedsql.MisplacedDSNParam("file:/p/t.db?fenced_tables=a"); err != nil {
		t.Errorf("a parameter of ours as a key: MisplacedDSNParam = %v, want nil (DSNParam's)", err)
	}
}

// TestDSNMisplacedParamPasswordNotQuoted: a password that itself holds text reading as
// a parameter of this package is refused (fail closed: README, DSN parameters), and
// the refusal quotes none of it.
func TestDSNMisplacedParamPasswordNotQuoted(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:Zq9fenced_tables%3DXk7@h/db?sslmode=disable",
		"host=h password='Zq9 fenced_tables=Xk7'",
		"u:Zq9,fenced_tables=Xk7@tcp(h:3306)/db?parseTime=true",
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
		for _, part := range []string{"Zq9", "Xk7"} {
			if strings.Contains(err.Error(), part) {
				t.Errorf("%q: the error quotes part of the password (%s): %v", dsn, part, err)
			}
		}
	}
}

// TestDSNMisplacedLookalikesOpen: text that holds "fenced" without reading as a
// parameter assignment — a database, directory, application or password named so, the
// package's own setting names as values — is not refused, and reaches the driver as
// written.
func TestDSNMisplacedLookalikesOpen(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:fenced_pw@h/fenced_app?sslmode=disable&application_name=fenced_tables",
		"postgres://u:pw@h/db?application_name=fencedsql%20worker",
		"host=h dbname=fenced_app user=fenced_user password=fenced_x application_name='fenced tables'",
		"u:fenced_pw@tcp(h:3306)/fenced_app?parseTime=true",
		"file:/srv/fenced_data/fenced_tables.db?mode=rwc",
		"file:/srv/fencedsql(1)/t.db?_pragma=busy_timeout(5000)",
		"file:/srv/x/t.db?_pragma=journal_mode(WAL)&fenced_tables=accounts",
	} {
		rec := newFakeRec()
		name := registerFake(t, &fakeDriver{rec: rec}, fencedsql.WithDialect(dsnDialect(dsn)), fencedsql.WithSchemaCheck(false))
		db, err := sql.Open(name, dsn)
		if err != nil {
			t.Errorf("%q: %v", dsn, err)
			continue
		}
		if err := db.Ping(); err != nil {
			t.Errorf("%q: ping: %v", dsn, err)
		}
		db.Close()
		if err := fencedsql.MisplacedDSNParam(dsn); err != nil {
			t.Errorf("%q: MisplacedDSNParam = %v", dsn, err)
		}
	}
}
