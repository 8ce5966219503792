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
