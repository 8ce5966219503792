package failover

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestSQLLockWritesOnReplicaRefused (red-team rt48d F2): sqllock's LastToken refused a
// replica, but its grant did not: on a MariaDB replica that is not read_only (MariaDB's
// default replica), or read_only with an account that may write there all the same
// (READ_ONLY ADMIN, SUPER: the harness's root), the grant procedure drew its token from
// the replica's counter and wrote the replica's lease row, and the primary then granted
// the same lock with the same token to another holder. Every procedure that writes now
// starts with the server-role check LastToken uses (myPrimaryCheck): a grant (TryAcquire,
// the queued Acquire), a renewal and a release of a lease the replica has a copy of, and
// RaiseFloor (checked before its UPDATE) fail there with ErrUnavailable, and the
// replica's counter and lease row are left as they were. A PostgreSQL hot standby refuses
// the same writes itself (25006), with the same error.
func TestSQLLockWritesOnReplicaRefused(t *testing.T) {
	env := needEnv(t)
	// Parallel: its pairs are its own (fresh directories and ports; SET GLOBAL only on
	// its own replica).
	t.Parallel()
	t.Run("PostgreSQL", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		pair, err := NewPostgres(ctx, env, Async)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pair.Close() })
		writesOnReplica(t, ctx, "pgx", sqllock.Postgres, pair.DSN(), pair.replica.dsn(), "standby")
	})
	t.Run("MariaDB", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		pair := asyncMariaDBPair(t, ctx, env)
		replicaDSN := pair.replica.dsn(mariaDBDatabase)
		// read_only OFF: MariaDB's default replica. ON: the harness's account has
		// READ_ONLY ADMIN (root), which writes there all the same.
		for _, mode := range []string{"OFF", "ON"} {
			if err := myDo(ctx, replicaDSN, func(db *sql.DB) error {
				_, err := db.ExecContext(ctx, "SET GLOBAL read_only = "+mode)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			t.Run("read_only="+mode, func(t *testing.T) {
				writesOnReplica(t, ctx, "mysql", sqllock.MySQL, pair.DSN(), replicaDSN, "read-only-"+mode)
			})
		}
	})
}

// writesOnReplica grants key on the primary, waits until the replica has the lease row,
// and checks that every write through a Backend on the replica is refused.
func writesOnReplica(t *testing.T, ctx context.Context, driver string, d sqllock.Dialect, primaryDSN, replicaDSN, key string) {
	backend := func(dsn string) (*sqllock.Backend, *sql.DB) {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		b, err := sqllock.New(db, sqllock.WithDialect(d))
		if err != nil {
			t.Fatal(err)
		}
		return b, db
	}
	bp, pdb := backend(primaryDSN)
	if err := sqllock.CreateTable(ctx, pdb, d, ""); err != nil {
		t.Fatal(err)
	}
	sp := locktest.OpenSession(t, bp, "primary", 10*time.Second)
	g, err := sp.TryAcquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	br, rdb := backend(replicaDSN)
	row, counter := "SELECT CAST(expires_at AS CHAR) FROM fencedsql_locks WHERE lock_key = ? AND token = ?",
		"SELECT v FROM fencedsql_locks_token WHERE id = 1"
	if d == sqllock.Postgres {
		row, counter = "SELECT expires_at::text FROM fencedsql_locks WHERE lock_key = $1 AND token = $2",
			"SELECT last_value FROM fencedsql_locks_token_seq"
	}
	state := func() (string, int64) {
		var exp string
		var last int64
		// Until the replica has replayed CreateTable, neither relation exists there.
		notYet := func(err error) bool {
			return err == nil || errors.Is(err, sql.ErrNoRows) || strings.Contains(err.Error(), "exist")
		}
		if err := rdb.QueryRowContext(ctx, row, key, int64(g.Token)).Scan(&exp); !notYet(err) {
			t.Fatal(err)
		}
		if err := rdb.QueryRowContext(ctx, counter).Scan(&last); !notYet(err) {
			t.Fatal(err)
		}
		return exp, last
	}
	deadline := time.Now().Add(30 * time.Second)
	exp, last := state()
	for exp == "" { // the replica catches up with the table, the routines and the grant
		if time.Now().After(deadline) {
			t.Fatal("the replica never got the primary's grant")
		}
		time.Sleep(100 * time.Millisecond)
		exp, last = state()
	}

	sr := locktest.OpenSession(t, br, "replica", 10*time.Second)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, lockclient.ErrUnavailable) || !strings.Contains(err.Error(), "replica") {
			t.Errorf("%s on the replica: %v; want ErrUnavailable naming the replica", what, err)
		}
	}
	other, err := sr.TryAcquire(ctx, key+"-other")
	if err == nil {
		t.Errorf("TryAcquire on the replica granted token %d (the primary's last: %d)", other.Token, g.Token)
	} else {
		refused("TryAcquire", err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, _, err = sr.(lockclient.QueueSession).AcquireQueued(short, key+"-queued")
	cancel()
	refused("AcquireQueued", err)
	refused("Renew", sr.Renew(ctx, g))
	refused("Release", sr.Release(ctx, g))
	refused("RaiseFloor", br.RaiseFloor(ctx, g.Token+1000))
	if e, l := state(); e != exp || l != last {
		t.Errorf("the replica's lease row and counter went from (%s, %d) to (%s, %d): a refused write changed them", exp, last, e, l)
	}
	if err := sp.Release(ctx, g); err != nil {
		t.Errorf("release on the primary: %v", err)
	}
}
