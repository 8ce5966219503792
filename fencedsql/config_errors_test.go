// Configuration errors: an invalid guard is reported when the pool is used.

package fencedsql_test

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// ---- configuration errors ----

func TestInvalidGuardReportedOnUse(t *testing.T) {
	for name, opts := range map[string][]fencedsql.Option{
		"space":               {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("a b")},
		"quote":               {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard(`x"y`)},
		"backtick":            {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("x`y")},
		"empty":               {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("")},
		"empty schema":        {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard(".accounts")},
		"three parts":         {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("a.b.c")},
		"bad token column":    {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("a", fencedsql.TokenColumn("f t"))},
		"same columns":        {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("a", fencedsql.TokenColumn("v"), fencedsql.VersionColumn("V"))},
		"empty version colum": {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("a", fencedsql.VersionColumn(""))},
		"no dialect":          {fencedsql.Guard("accounts")},
		// MySQL/MariaDB compare non-ASCII column names by their own case table (red-team
		// rt38a F6): a non-ASCII fencing column is refused there.
		"mysql non-ASCII version column": {fencedsql.WithDialect(mysql.Dialect), fencedsql.Guard("a", fencedsql.VersionColumn("ვერსია"))},
		"mysql non-ASCII token column":   {fencedsql.WithDialect(mysql.Dialect), fencedsql.Guard("a", fencedsql.TokenColumn("fence_tokén"))},
	} {
		t.Run(name, func(t *testing.T) {
			rec := newFakeRec()
			db := fencedsql.OpenDB(fencedsql.DSNConnector(&fakeDriver{rec: rec, full: true}, "fake"), opts...)
			defer db.Close()
			err := db.Ping()
			var ce *fencedsql.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Ping = %v, want *ConfigError", err)
			}
			if _, err := db.Exec("SELECT 1"); !errors.As(err, &ce) {
				t.Errorf("Exec = %v, want *ConfigError", err)
			}
			if len(rec.dsns) != 0 {
				t.Errorf("the wrapped driver was opened")
			}

			// The same through Register and sql.Open.
			n := fmt.Sprintf("fenced-badguard-%d", regSeq.Add(1))
			fencedsql.Register(n, &fakeDriver{rec: rec}, opts...)
			db2, err := sql.Open(n, "x")
			if err == nil {
				err = db2.Ping()
				db2.Close()
			}
			if !errors.As(err, &ce) {
				t.Errorf("sql.Open/Ping = %v, want *ConfigError", err)
			}
		})
	}
}
