package sqllock_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestTokenColumnDomainOverBigint (red-team rt33c, over-refusal): on
// PostgreSQL the lease table's token column is declared with a DOMAIN over bigint
// (CREATE DOMAIN rt33c_token AS bigint CHECK (VALUE > 0): a schema that names its
// types). The column holds every BIGINT token; the token-source check reads
// pg_catalog.format_type, which spells the domain's name, and narrowColumn refuses
// anything not spelled "bigint". Right behaviour: the check judges the domain's base
// type (pg_type.typbasetype, or information_schema's data_type) and CheckTable,
// RaiseFloor and Acquire succeed.
func TestTokenColumnDomainOverBigint(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		if srv.dialect != sqllock.Postgres {
			t.Skip("PostgreSQL domains")
		}
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 20*time.Second)
		for _, s := range []string{
			`CREATE DOMAIN rt33c_token AS bigint CHECK (VALUE > 0)`,
			`ALTER TABLE fencedsql_locks ALTER COLUMN token TYPE rt33c_token`,
		} {
			if _, err := admin.ExecContext(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		b, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.CheckTable(ctx); err != nil {
			t.Errorf("CheckTable over a bigint domain token column: %v; want nil (it holds every BIGINT token)", err)
		}
		c := lockclient.New(b, lockclient.WithTTL(10*time.Second))
		defer c.Close(context.Background())
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if _, err := c.Acquire(actx, "k"); err != nil {
			t.Errorf("Acquire over a bigint domain token column: %v; want a lease", err)
		}
	})
}
