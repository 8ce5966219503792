package sqllock_test

import (
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// Two Backends on one lease table — one pool through a proxy, one direct, as two
// processes naming the server by two addresses — share an identity; another table of
// the same database, or the same table name in another database, is another service
// (red-team rt42e F2).
func TestServiceIdentity(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			n := newNamespace(t, srv)
			mustNew := func(b *sqllock.Backend, err error) lockclient.Backend {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			direct := srv.open(t, n.dsn)
			if err := sqllock.CreateTable(ctxT(t, 30*time.Second), direct, srv.dialect, "other_locks"); err != nil {
				t.Fatal(err)
			}
			elsewhere, _ := srv.fresh(t, "")
			locktest.ServiceIdentity(t,
				[]lockclient.Backend{n.backend("a", nil), mustNew(sqllock.New(direct))},
				mustNew(sqllock.New(direct, sqllock.WithTable("other_locks"))),
				mustNew(sqllock.New(srv.open(t, elsewhere))))
		})
	}
}

// A Client whose session was opened before the lease table existed (the application
// started before its migration ran CreateTable) names the service in the leases it is
// granted once the table exists, on the queued (Acquire) and the TryAcquire path alike:
// the identity unknown at Open is read again at the next grant (red-team rt44c F3).
func TestServiceIDReadAtGrantAfterCreateTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		ctx := ctxT(t, 30*time.Second)
		db := srv.open(t, srv.newDSN(t)) // a new database without the lease table
		b, err := sqllock.New(db)
		if err != nil {
			t.Fatal(err)
		}
		c := lockclient.New(b, lockclient.WithTTL(5*time.Second), lockclient.WithOwner("early"))
		defer func() { _ = c.Close(ctx) }()
		if l, err := c.TryAcquire(ctx, "before"); err == nil {
			_ = l.Release(ctx)
			t.Fatal("granted without a lease table")
		}
		if err := sqllock.CreateTable(ctx, db, srv.dialect, "fencedsql_locks"); err != nil {
			t.Fatal(err)
		}
		queued, err := c.Acquire(ctx, "queued")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = queued.Release(ctx) }()
		tried, err := c.TryAcquire(ctx, "tried")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tried.Release(ctx) }()
		late := lockclient.New(b, lockclient.WithTTL(5*time.Second), lockclient.WithOwner("late"))
		defer func() { _ = late.Close(ctx) }()
		l2, err := late.Acquire(ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l2.Release(ctx) }()
		want := l2.ServiceID()
		if want == "" {
			t.Fatal("a Client opened after CreateTable names no service")
		}
		if queued.ServiceID() != want || tried.ServiceID() != want {
			t.Fatalf("leases of a Client opened before CreateTable name %q (Acquire) and %q (TryAcquire), want %q",
				queued.ServiceID(), tried.ServiceID(), want)
		}
	})
}

// A session opened before CreateTable answers the identity once it is known, without
// a Client: the Backend's cache, not a copy taken at Open (red-team rt44c F3).
func TestServiceIDOfSessionOpenedBeforeCreateTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		ctx := ctxT(t, 30*time.Second)
		db := srv.open(t, srv.newDSN(t))
		b, err := sqllock.New(db)
		if err != nil {
			t.Fatal(err)
		}
		s, err := b.Open(ctx, "early", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close(ctx) }()
		si := s.(lockclient.ServiceIdentifier)
		if id := si.ServiceID(); id != "" {
			t.Fatalf("identity %q before the token source exists", id)
		}
		if err := sqllock.CreateTable(ctx, db, srv.dialect, "fencedsql_locks"); err != nil {
			t.Fatal(err)
		}
		g, err := s.TryAcquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Release(ctx, g) }()
		if si.ServiceID() == "" {
			t.Fatalf("session opened before CreateTable still names no service after granting token %d", g.Token)
		}
	})
}
