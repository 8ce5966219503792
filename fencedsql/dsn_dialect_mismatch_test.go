// A DSN parameter of this package left in the DSN by a dialect whose DSN form does not
// match the driver's (red-team rt37b F6): refused at open.

package fencedsql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	msqlite "modernc.org/sqlite"
)

// TestDSNParamLeftUnderOtherDialectsReadingRefused (fail-open; needs two mistakes: a
// dialect that does not match the driver, and the schema check off). OpenDB over a
// DSNConnector reads the DSN's fenced_* parameters by the *dialect's* DSN rules. The
// PostgreSQL dialect takes every DSN that does not start with postgres:// or
// postgresql:// for the keyword/value form, so `file:/…/t.db?fenced_tables=accounts`
// (an SQLite DSN, opened with WithDialect(postgres.Dialect) by a copy-paste mistake)
// is one key, `file:/…/t.db?fenced_tables`, that is not ours: nothing is read, and
// the DSN reaches modernc's driver still holding fenced_tables, which modernc
// ignores. The check for "a parameter of this package where the driver reads none"
// (paramOfOurs) runs only outside the keyword/value form, and the DSNConnector's own
// refusal of a DSN still holding one applies only when it is opened by sql.OpenDB, not
// by fencedsql.OpenDB. With WithSchemaCheck(false) the catalog queries that fail are
// only logged to the pool's (discarding) logger, the pool guards nothing, and a stale
// DELETE (token 5, row at 10) deletes the row. G13: a fenced_* parameter "never
// reaches the server"; "a configuration the wrapper cannot honour is an error at open".
//
// Now: after splitting, a cleaned DSN in which paramOfOurs still finds a parameter of
// this package — whatever form the dialect read it in — is a *ConfigError at open
// (splitDSN), as DSNConnector's Connect refuses it under sql.OpenDB; nothing is sent
// and the row keeps its balance.
func TestDSNParamLeftUnderOtherDialectsReadingRefused(t *testing.T) {
	ctx := context.Background()
	p, raw := accountsAt10SQLite(t)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+p+"?fenced_tables=accounts"),
		fencedsql.WithDialect(postgres.Dialect), fencedsql.WithSchemaCheck(false))
	defer db.Close()
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "DELETE FROM accounts WHERE id = 1")
	var n int
	if qerr := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE id = 1").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	var ce *fencedsql.ConfigError
	if n != 1 || !errors.As(err, &ce) {
		t.Fatalf("OpenDB(DSNConnector(sqlite, \"file:…?fenced_tables=accounts\"), WithDialect(postgres.Dialect), WithSchemaCheck(false)): stale DELETE (token 5, row at 10) returned %v, rows with id 1 left: %d; want a *ConfigError at open (fenced_tables left in the DSN the driver gets), row kept", err, n)
	}
}
