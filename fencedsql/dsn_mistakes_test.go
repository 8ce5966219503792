// Red-team pass rt24b: configuration mistakes that would leave a guarded table
// unguarded, each now refused or obeyed.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// RT24B F1. splitDSN (and OpenDB over DSNConnector) judge a parameter key url-decoded,
// and read every DSN: a key whose letters are percent-encoded (%66enced_tables,
// fenc%65d_tables) is this package's fenced_tables, and guards accounts (a tokenless
// UPDATE is refused with ErrNoToken); %46ENCED_TABLES decodes to a misspelling of it,
// refused as a ConfigError. Before, both skipped a DSN whose raw text did not contain
// "fenced", and modernc's SQLite, which ignores unknown parameters, opened a pool that
// guarded nothing.
func TestPercentEncodedKeyLettersRead(t *testing.T) {
	// want: the key is read as fenced_tables (ErrNoToken), or refused (ConfigError).
	check := func(t *testing.T, how, param string, obeyed bool, err error, path string) {
		t.Helper()
		var ce *fencedsql.ConfigError
		if obeyed && !errors.Is(err, fencedsql.ErrNoToken) || !obeyed && !errors.As(err, &ce) {
			t.Errorf("%s(…?%s): tokenless UPDATE accounts: err = %v, balance now %d; want ErrNoToken when the key decodes to fenced_tables, else a ConfigError", how, param, err, balanceOf(t, path))
		}
	}
	for i, c := range []struct {
		param  string
		obeyed bool
	}{{"%66enced_tables=accounts", true}, {"fenc%65d_tables=accounts", true}, {"%46ENCED_TABLES=accounts", false}} {
		t.Run(fmt.Sprint("sql.Open/", i), func(t *testing.T) {
			path := twoColumnSets(t)
			db, err := sql.Open(sqlite.DriverName, "file:"+path+"?"+c.param)
			if err == nil {
				defer db.Close()
				_, err = db.ExecContext(context.Background(), `UPDATE accounts SET balance = 666 WHERE id = 1`)
			}
			check(t, "sql.Open(fenced-sqlite)", c.param, c.obeyed, err, path)
		})
		t.Run(fmt.Sprint("OpenDB/", i), func(t *testing.T) {
			path := twoColumnSets(t)
			db := fencedsql.OpenDB(fencedsql.DSNConnector(sqlDriver(t), "file:"+path+"?"+c.param), fencedsql.WithDialect(sqlite.Dialect))
			defer db.Close()
			_, err := db.ExecContext(context.Background(), `UPDATE accounts SET balance = 666 WHERE id = 1`)
			check(t, "OpenDB(DSNConnector)", c.param, c.obeyed, err, path)
		})
	}
}

// RT24B F2. A near miss of a parameter of this package that does not start with
// "fenced" — fence_tables, fencd_tables, fenecd_tables — is taken for one (ours: its
// folded letters start with "fence", begin with one edit of "fenced", or are within
// two edits of a known parameter) and refused at Open with a ConfigError naming
// fenced_tables. Before, it went to the driver; PostgreSQL and MariaDB refuse an
// unknown parameter, but modernc's SQLite ignores it, and the pool guarded nothing.
func TestNearMissKeyRefusedSQLite(t *testing.T) {
	for i, param := range []string{"fence_tables=accounts", "fencd_tables=accounts", "fenecd_tables=accounts"} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			path := twoColumnSets(t)
			db, err := sql.Open(sqlite.DriverName, "file:"+path+"?"+param)
			if err == nil {
				defer db.Close()
				_, err = db.ExecContext(context.Background(), `UPDATE accounts SET balance = 666 WHERE id = 1`)
			}
			var ce *fencedsql.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "did you mean fenced_tables") {
				t.Errorf("sql.Open(fenced-sqlite, …?%s): tokenless UPDATE accounts: err = %v, balance now %d; want a ConfigError naming fenced_tables", param, err, balanceOf(t, path))
			}
		})
	}
}

// RT24B F3. fenced_token_column and fenced_version_column name the columns of the
// DSN's tables; without fenced_tables they would apply to none (a template whose table
// list was lost), and a pool without a registry would guard nothing. Such a DSN is a
// ConfigError at Open, as an empty fenced_tables is.
func TestColumnParamsWithoutTablesRefused(t *testing.T) {
	path := twoColumnSets(t)
	db, err := sql.Open(sqlite.DriverName, "file:"+path+"?fenced_token_column=tok&fenced_version_column=ver")
	if err == nil {
		defer db.Close()
		_, err = db.ExecContext(context.Background(), `UPDATE accounts SET balance = 666 WHERE id = 1`)
	}
	var ce *fencedsql.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "no fenced_tables") {
		t.Errorf("fenced_token_column=tok&fenced_version_column=ver without fenced_tables: tokenless UPDATE accounts: err = %v, balance now %d; want a ConfigError (column parameters that apply to no table)", err, balanceOf(t, path))
	}
}

// RT24B F8. DSNConnector's DSN is read by fencedsql.OpenDB, which takes its fenced_*
// parameters out. Handed to database/sql's sql.OpenDB instead (the same function name,
// one import away), its Connect refuses a DSN that still holds a parameter of this
// package with a ConfigError ("open the connector with fencedsql.OpenDB"): the driver
// would get fenced_tables, and modernc's SQLite, which ignores it, would open a pool
// that guards nothing.
func TestDSNConnectorUnderSQLOpenDBRefused(t *testing.T) {
	path := twoColumnSets(t)
	db := sql.OpenDB(fencedsql.DSNConnector(sqlDriver(t), "file:"+path+"?fenced_tables=accounts"))
	defer db.Close()
	_, err := db.ExecContext(context.Background(), `UPDATE accounts SET balance = 666 WHERE id = 1`)
	var ce *fencedsql.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "fencedsql.OpenDB") {
		t.Errorf("sql.OpenDB(fencedsql.DSNConnector(modernc, …?fenced_tables=accounts)): tokenless UPDATE accounts: err = %v, balance now %d; want a ConfigError (the DSN's fenced_tables would otherwise be dropped without a word)", err, balanceOf(t, path))
	}
}

// TestFencingNearMissRefusedSQLite (red-team rt25b F4): "fencing_tables" (the
// package's own word for what it does), "fencing_table" and "FencingTables" are near
// misses of fenced_tables: their folded letters start with "fenc", and nearest maps
// them to fenced_tables. ours() takes them for parameters of this package (any key
// nearest names a parameter for, or whose folded letters start with "fenc"), so they
// never reach modernc's SQLite, which ignores unknown parameters: the pool is refused
// at Open with a ConfigError naming fenced_tables, through sql.Open("fenced-sqlite", …)
// and sql.OpenDB(DSNConnector(…)) alike. Before, the pool opened and guarded nothing.
func TestFencingNearMissRefusedSQLite(t *testing.T) {
	for i, param := range []string{"fencing_tables=accounts", "fencing_table=accounts", "FencingTables=accounts"} {
		t.Run(fmt.Sprint("sql.Open/", i), func(t *testing.T) {
			path := twoColumnSets(t)
			db, err := sql.Open(sqlite.DriverName, "file:"+path+"?"+param)
			if err == nil {
				defer db.Close()
				_, err = db.ExecContext(context.Background(), `UPDATE accounts SET balance = 666 WHERE id = 1`)
			}
			var ce *fencedsql.ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("sql.Open(fenced-sqlite, …?%s): tokenless UPDATE accounts: err = %v, balance now %d; want a ConfigError naming fenced_tables (a near miss)", param, err, balanceOf(t, path))
			}
		})
		t.Run(fmt.Sprint("sql.OpenDB(DSNConnector)/", i), func(t *testing.T) {
			path := twoColumnSets(t)
			db := sql.OpenDB(fencedsql.DSNConnector(sqlDriver(t), "file:"+path+"?"+param))
			defer db.Close()
			_, err := db.ExecContext(context.Background(), `UPDATE accounts SET balance = 666 WHERE id = 1`)
			var ce *fencedsql.ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("sql.OpenDB(DSNConnector(modernc, …?%s)): tokenless UPDATE accounts: err = %v, balance now %d; want a ConfigError (the DSN holds a near miss of fenced_tables)", param, err, balanceOf(t, path))
			}
		})
	}
}
