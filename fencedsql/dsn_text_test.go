// A DSN that is not one line, and the masking of the errors of reading a DSN.

package fencedsql_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	_ "github.com/fencedsql/fencedsql/dialects/mysql" // registers "fenced-mysql"
	_ "github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// A DSN holding a line break or another control character — an env file read whole,
// its PGPASSWORD=… line included — is refused with a *ConfigError that quotes none of
// it, in every DSN form and through sql.Open and OpenDB(DSNConnector) alike, before
// the driver sees it (red-team rt45e F3: the wrapper's error quoted fenced_tables'
// value up to the end of the file, and pgx's parse error the whole DSN; neither
// secret is one the DSN names as its password, so no mask found it).
func TestDSNOfMoreThanOneLineRefused(t *testing.T) {
	const pw = "Zq9linesSECRET"
	file := "file:" + filepath.Join(t.TempDir(), "l.db")
	for _, c := range []struct{ driver, dsn string }{
		// the last parameter is ours: its value runs to the end of the file
		{"fenced-pgx", "postgres://app@127.0.0.1:1/db?sslmode=disable&fenced_tables=accounts\nPGPASSWORD=" + pw},
		// the last parameter is pgx's: pgx's parse error quotes the DSN
		{"fenced-pgx", "postgres://app@127.0.0.1:1/db?fenced_tables=accounts&sslmode=disable\nPGPASSWORD=" + pw},
		{"fenced-pgx", "postgres://app@127.0.0.1:1/db?fenced_tables=accounts&sslmode=disable\r\nPGPASSWORD=" + pw + "\r\n"},
		{"fenced-pgx", "host=127.0.0.1 port=1 user=app fenced_tables=accounts sslmode=disable\nPGPASSWORD=" + pw},
		{"fenced-pgx", "host=127.0.0.1 port=1 user=app fenced_tables=accounts sslmode=bogus\x00" + pw},
		{"fenced-mysql", "app@tcp(127.0.0.1:1)/shop?fenced_tables=accounts\nMYSQL_PWD=" + pw},
		{"fenced-sqlite", file + "?fenced_tables=accounts\u2028SECRET=" + pw},
	} {
		name := strings.ReplaceAll(c.dsn, pw, "<SECRET>")
		err := badOpenErr(t, c.driver, c.dsn)
		var ce *fencedsql.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "line break") {
			t.Errorf("%s %q: err = %v (%T), want a *ConfigError about the line break", c.driver, name, err, err)
		}
		if err != nil && (strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "127.0.0.1")) {
			t.Errorf("%s %q: the error quotes the DSN: %v", c.driver, name, strings.ReplaceAll(err.Error(), pw, "<SECRET>"))
		}
	}
	// OpenDB over DSNConnector: refused on use, the mock driver never opened.
	dsn := fmt.Sprintf("fencedsql-lines-%d?fenced_tables=accounts\nSECRET=%s", badMockSeq.Add(1), pw)
	mdb, mock, err := sqlmock.NewWithDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer mdb.Close()
	db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn), fencedsql.WithDialect(sqlite.Dialect))
	defer db.Close()
	err = db.Ping()
	var ce *fencedsql.ConfigError
	if !errors.As(err, &ce) || strings.Contains(err.Error(), pw) {
		t.Errorf("OpenDB(DSNConnector): err = %v, want a *ConfigError without the secret", err)
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
	// A tab is a blank of the keyword/value form: not refused for it.
	if err := badOpenErr(t, "fenced-pgx", "host=127.0.0.1\tport=1 user=app fenced_tables=accounts connect_timeout=1"); err == nil || strings.Contains(err.Error(), "line break") {
		t.Errorf("a tab: err = %v, want the connection's failure", err)
	}
}

// The errors of reading a DSN's parameters of this package keep their type, with the
// DSN's password masked where a value quotes it (a password pasted into the wrong
// parameter).
func TestDSNParameterErrorMasksPassword(t *testing.T) {
	const pw = "Zq9paramSECRET"
	for _, dsn := range []string{
		"postgres://app:" + pw + "@127.0.0.1:1/db?fenced_strict=" + pw,
		"host=127.0.0.1 port=1 user=app password=" + pw + " fenced_tables=accounts fenced_allow=" + pw,
		"postgres://app:" + pw + "@127.0.0.1:1/db?fenced_tables=" + pw + "%3B",
	} {
		err := badOpenErr(t, "fenced-pgx", dsn)
		var ce *fencedsql.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("err = %v (%T), want *ConfigError", err, err)
		}
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("the error quotes the password: %v", strings.ReplaceAll(err.Error(), pw, "<SECRET>"))
		}
	}
}
