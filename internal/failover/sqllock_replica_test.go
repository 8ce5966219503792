package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestSQLLockLastTokenOnReplica: sqllock's LastToken — the number a failover hook
// raises the guarded database's floor above — is read from a primary only. On a
// PostgreSQL standby and on a MariaDB replica (read_only on, and off as MariaDB's
// default replica runs) the token source may lag tokens the primary granted; a floor
// raised from it would let those tokens write again. LastToken there fails with an
// error wrapping lockclient.ErrUnavailable, and on the primary it answers the last
// token granted.
func TestSQLLockLastTokenOnReplica(t *testing.T) {
	env := needEnv(t)
	// Parallel: its pairs are its own (fresh directories and ports; SET GLOBAL only on
	// its own replica), and it waits mostly for their servers to start and replicate.
	t.Parallel()
	t.Run("PostgreSQL", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		pair, err := NewPostgres(ctx, env, Async)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pair.Close() })
		lastTokenOnReplica(t, ctx, "pgx", sqllock.Postgres, pair.DSN(), pair.replica.dsn(), nil)
	})
	t.Run("MariaDB", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		pair := asyncMariaDBPair(t, ctx, env)
		replicaDSN := pair.replica.dsn(mariaDBDatabase)
		lastTokenOnReplica(t, ctx, "mysql", sqllock.MySQL, pair.DSN(), replicaDSN, func() {
			// MariaDB's default: a replica that is not read_only, seen by its
			// replication threads.
			if err := myDo(ctx, replicaDSN, func(db *sql.DB) error {
				_, err := db.ExecContext(ctx, "SET GLOBAL read_only = OFF")
				return err
			}); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func lastTokenOnReplica(t *testing.T, ctx context.Context, driver string, d sqllock.Dialect, primaryDSN, replicaDSN string, writable func()) {
	open := func(dsn string, create bool) *lockclient.Client {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if create {
			if err := sqllock.CreateTable(ctx, db, d, ""); err != nil {
				t.Fatal(err)
			}
		}
		b, err := sqllock.New(db, sqllock.WithDialect(d))
		if err != nil {
			t.Fatal(err)
		}
		c := lockclient.New(b, lockclient.WithTTL(10*time.Second))
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	primary := open(primaryDSN, true)
	var granted uint64
	for i := 0; i < 3; i++ {
		l, err := primary.Acquire(ctx, fmt.Sprint("k", i))
		if err != nil {
			t.Fatal(err)
		}
		granted = l.Token()
	}
	if n, err := primary.LastToken(ctx); err != nil || n < granted {
		t.Fatalf("LastToken on the primary = %d, %v; want at least %d", n, err, granted)
	}
	replica := open(replicaDSN, false)
	check := func(what string) {
		// The replica catches up with the lease table's creation and the grants; until
		// then LastToken may fail otherwise (no table yet), never with a number.
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, err := replica.LastToken(ctx)
			if err == nil {
				t.Fatalf("LastToken on the %s = %d, nil; want a refusal (a replica's token source may lag the primary's)", what, n)
			}
			if errors.Is(err, lockclient.ErrUnavailable) && strings.Contains(err.Error(), "replica") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("LastToken on the %s: %v; want ErrUnavailable naming the replica", what, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	check("replica")
	if writable != nil {
		writable()
		check("writable replica")
	}
}

// asyncMariaDBPair starts a MariaDB primary and asynchronous replica from a template
// of their own, both closed when the test ends.
func asyncMariaDBPair(t *testing.T, ctx context.Context, env Env) *MariaDBPair {
	t.Helper()
	tmpl, err := NewMariaDBTemplate(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tmpl.Close() })
	pair, err := NewMariaDB(ctx, tmpl, Async)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })
	return pair
}
