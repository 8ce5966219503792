package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestNonTransactionalGuardTablesRefused: the tombstone table and the token floor
// must be InnoDB like the guarded table. A MEMORY one is emptied at every restart
// (the tombstones, G9, or the floor forgotten); MyISAM, Aria and the other engines
// without transactions keep what a failed statement wrote. schema.Check reports it
// with ALTER TABLE … ENGINE=InnoDB, and the lazy check refuses fenced writes with
// ErrSchema (red-team rt11f F5).
func TestNonTransactionalGuardTablesRefused(t *testing.T) {
	for _, c := range []struct{ table, engine string }{
		{"fencedsql_tomb_accounts", "MEMORY"},
		{"fencedsql_floor", "MEMORY"},
		{"fencedsql_floor", "MyISAM"},
	} {
		t.Run(c.table+"_"+c.engine, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dsn, admin := tombstoneClockSetup(t, ctx)
			testdb.Exec(t, admin, "ALTER TABLE "+c.table+" ENGINE="+c.engine)
			reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				t.Fatal(err)
			}
			p := strings.Join(reports[0].Problems, "\n")
			if !strings.Contains(p, c.table) || !strings.Contains(strings.Join(reports[0].Fix, "\n"), "ALTER TABLE `"+c.table+"` ENGINE=InnoDB") {
				t.Errorf("schema.Check with %s ENGINE=%s: problems %q, fix %q; want it reported with ALTER TABLE … ENGINE=InnoDB", c.table, c.engine, p, reports[0].Fix)
			}
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
			if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM accounts WHERE id = 2"); !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("fenced DELETE with %s ENGINE=%s: %v, want ErrSchema", c.table, c.engine, err)
			}
		})
	}
}
