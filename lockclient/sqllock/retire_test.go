package sqllock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestRetireRefusesEarlierReleaseGrants: the retirement is in the token source itself,
// so the grant statements of an earlier release of this package, which know nothing of
// it (PostgreSQL nextval on the sequence, MySQL's grant procedures), fail too; and a
// retirement is not undone by CreateTable.
func TestRetireRefusesEarlierReleaseGrants(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 20*time.Second)
		b, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
		if err != nil {
			t.Fatal(err)
		}
		last, err := b.Retire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := sqllock.CreateTable(ctx, admin, srv.dialect, "fencedsql_locks"); err != nil {
			t.Fatal(err)
		}
		grants := []string{`SELECT nextval('fencedsql_locks_token_seq')`}
		if srv.dialect == sqllock.MySQL {
			grants = []string{
				"CALL fencedsql_locks_grant_v1('k', 'old', 's1', 1000000)",
				"CALL fencedsql_locks_grant_v2('k', 'old', 's2', 'w2', 1000000, 0)",
			}
		}
		for _, g := range grants {
			var tok int64
			if err := admin.QueryRowContext(ctx, g).Scan(&tok); err == nil {
				t.Errorf("%s on a retired service (last %d) drew token %d", g, last, tok)
			}
		}
		if again, err := b.LastToken(ctx); err != nil || again != last {
			t.Errorf("LastToken after the grants of an earlier release = %d, %v; want %d", again, err, last)
		}
	})
}

// TestRetireRefusesSourceBehindLeaseTable: Retire reads the source as LastToken does; a
// source set back below a token of the lease table is a *SchemaError and the service is
// not marked (a grant after the floor is fixed still works).
func TestRetireRefusesSourceBehindLeaseTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 20*time.Second)
		b, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.RaiseFloor(ctx, 500); err != nil {
			t.Fatal(err)
		}
		c := lockclient.New(b, lockclient.WithTTL(30*time.Second))
		defer c.Close(context.Background())
		l, err := c.Acquire(ctx, "held")
		if err != nil {
			t.Fatal(err)
		}
		reset := `ALTER SEQUENCE fencedsql_locks_token_seq RESTART WITH 1`
		if srv.dialect == sqllock.MySQL {
			reset = `UPDATE fencedsql_locks_token SET v = 0 WHERE id = 1`
		}
		if _, err := admin.ExecContext(ctx, reset); err != nil {
			t.Fatal(err)
		}
		b2, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
		if err != nil {
			t.Fatal(err)
		}
		last, err := b2.Retire(ctx)
		if !errors.As(err, new(*sqllock.SchemaError)) || errors.Is(err, lockclient.ErrRetired) {
			t.Fatalf("Retire of a source behind token %d = %d, %v; want a *SchemaError", l.Token(), last, err)
		}
		if err := b2.RaiseFloor(ctx, 1000); err != nil {
			t.Fatalf("RaiseFloor after the refused Retire: %v (was the service marked?)", err)
		}
	})
}
