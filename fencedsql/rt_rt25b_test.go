package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestRTrt25bFencingNearMissSQLite (red-team rt25b F4): "fencing_tables" (the
// package's own word for what it does), "fencing_table" and "FencingTables" are near
// misses of fenced_tables: their folded letters start with "fenc", and nearest maps
// them to fenced_tables. ours() takes them for parameters of this package (any key
// nearest names a parameter for, or whose folded letters start with "fenc"), so they
// never reach modernc's SQLite, which ignores unknown parameters: the pool is refused
// at Open with a ConfigError naming fenced_tables, through sql.Open("fenced-sqlite", …)
// and sql.OpenDB(DSNConnector(…)) alike. Before, the pool opened and guarded nothing.
func TestRTrt25bFencingNearMissSQLite(t *testing.T) {
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
