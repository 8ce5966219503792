package sqllock_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// red-team rt41c F4: the lease table in the fenced database, reached through a fenced pool (a
// documented set-up), and Release given the context the work ran under
// (fencedsql.WithLease(ctx, lease) — the natural `defer lease.Release(ctx)`). Release
// first marks the lease lost, then sends the owner-checked DELETE under that context:
// the wrapper refuses the statement for the lease it carries ("statement not sent, its
// lease was lost") and the key stays held at the service for the rest of its TTL,
// while Release reports ErrLeaseLost for a lease that was held until that call.
func TestReleaseUnderOwnLeaseThroughFencedPool(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			_, be := backendOnFencedPool(t, srv)
			ttl := 10 * time.Second
			a := lockclient.New(be, lockclient.WithOwner("a"), lockclient.WithTTL(ttl))
			b := lockclient.New(be, lockclient.WithOwner("b"), lockclient.WithTTL(ttl))
			t.Cleanup(func() { a.Close(context.Background()); b.Close(context.Background()) })
			ctx := ctxT(t, 30*time.Second)
			la, err := a.Acquire(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			bound := fencedsql.WithLease(ctx, la)
			rerr := la.Release(bound)
			lb, err := b.TryAcquire(ctx, "k")
			if err != nil || rerr != nil {
				t.Fatalf("Release of a held lease under its own bound context = %v; another client's TryAcquire right after = (%v, %v), want nil and a grant: "+
					"the release was refused by the fenced pool and the key stays held for the TTL (%v)", rerr, lb, err, ttl)
			}
			_ = lb.Release(ctx)
		})
	}
}

// backendOnFencedPool returns a fenced pool (fencedsql's driver for srv) on a fresh
// database holding the lease table, and an sqllock backend on it: the set-up of the
// lease table in the fenced database.
func backendOnFencedPool(t *testing.T, srv server) (*sql.DB, *sqllock.Backend) {
	t.Helper()
	dsn, _ := srv.fresh(t, "")
	name := "fenced-pgx"
	if srv.dialect == sqllock.MySQL {
		name = "fenced-mysql"
	}
	db, err := sql.Open(name, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	be, err := sqllock.New(db)
	if err != nil {
		t.Fatal(err)
	}
	return db, be
}
