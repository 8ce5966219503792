package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	msqlite "modernc.org/sqlite"
)

// A migration on a plain connection renames a guarded table's fencing column, or drops
// a guard table, while a pool runs with its verdicts cached (default recheck): the
// pool's next fenced write fails typed (ErrSchema, the driver's error reachable), not
// with SQLite's raw "no such column" / "no such table", and the write after it is the
// lazy check's own refusal (red-team rt50d F3); so is a Prepare of the write, sent to
// the driver to be prepared. A write naming a column the table never had stays the
// driver's error.
func TestRunningPoolSchemaChangeTypedSQLite(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ ddl, write string }{
		{`ALTER TABLE accounts RENAME COLUMN fence_token TO ft`, `UPDATE accounts SET balance = 7 WHERE id = 1`},
		{`ALTER TABLE accounts RENAME COLUMN version TO v_old`, `UPDATE accounts SET balance = 7 WHERE id = 1`},
		{`DROP TABLE fencedsql_tomb_accounts`, `DELETE FROM accounts WHERE id = 1`},
		{`DROP TABLE fencedsql_tomb_accounts`, `INSERT INTO accounts (id, balance) VALUES (2, 1)`},
		{`DROP TABLE fencedsql_floor`, `UPDATE accounts SET balance = 7 WHERE id = 1`},
	} {
		for _, prepare := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s/prepare=%v", c.ddl, c.write, prepare), func(t *testing.T) {
				file, raw := ownTriggerDB(t)
				db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, file), fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("accounts"))
				defer db.Close()
				if _, err := db.ExecContext(fencedsql.WithToken(ctx, 60), `UPDATE accounts SET balance = 601 WHERE id = 1`); err != nil {
					t.Fatal(err) // verdicts cached
				}
				if _, err := db.ExecContext(fencedsql.WithToken(ctx, 60), `UPDATE accounts SET nosuch = 1 WHERE id = 1`); err == nil || errors.Is(err, fencedsql.ErrSchema) {
					t.Errorf("a write naming a column the table never had: %v; want the driver's error", err)
				}
				ownExec(t, raw, c.ddl)
				if prepare {
					// Prepare sends the rewrite to be prepared: it fails there, typed
					st, err := db.PrepareContext(ctx, c.write)
					var le *msqlite.Error
					if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &le) {
						t.Errorf("%s on a plain connection while the pool ran; Prepare(%s): %v; want ErrSchema, the driver's error reachable", c.ddl, c.write, err)
					}
					if st != nil {
						st.Close()
					}
				}
				for i := 0; i < 2; i++ {
					_, err := db.ExecContext(fencedsql.WithToken(ctx, 70), c.write)
					var se *fencedsql.SchemaError
					var le *msqlite.Error
					if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) {
						t.Errorf("%s on a plain connection while the pool ran; the pool's write %d (%s) under 70: %v (%T); want ErrSchema (*SchemaError)", c.ddl, i+1, c.write, err, err)
					} else if i == 0 && !prepare && !errors.As(err, &le) {
						t.Errorf("first write: %v; want the driver's error reachable", err)
					}
				}
			})
		}
	}
}
