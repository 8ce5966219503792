// The lockclient conformance suites on each server, with expiry judged by the server's clock in every time zone.

package sqllock_test

import (
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

func TestConformance(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			locktest.Run(t, locktest.Harness{TTL: locktest.NetworkTTL, FIFO: true, New: func(t *testing.T) locktest.Namespace {
				return newNamespace(t, srv)
			}})
		})
	}
	// PostgreSQL with Wait polling instead of LISTEN (as behind PgBouncer).
	t.Run("postgres-polling", func(t *testing.T) {
		t.Parallel()
		locktest.Run(t, locktest.Harness{TTL: locktest.NetworkTTL, FIFO: true, New: func(t *testing.T) locktest.Namespace {
			return newNamespace(t, servers[0], sqllock.WithPolling())
		}})
	})
}

// The session-level suite on each server. Expiry is the server's: the client sends the
// TTL as a duration, never a time, and a grant the server considers expired is expired,
// whatever the client's clock says.
//
// Not parallel: the statement hook the server clock installs is global.
func TestSessionConformance(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		locktest.RunSession(t, locktest.SessionHarness{
			New: func(t *testing.T) locktest.Namespace { return newNamespace(t, srv) },
			ForeignGrant: func(g lockclient.Grant) lockclient.Grant {
				return lockclient.Grant{Key: g.Key, Token: g.Token}
			},
			SecondRelease: lockclient.ErrNotOwner, // no row of this session and token
			ServerClock: func(t *testing.T, ns locktest.Namespace) locktest.ServerClock {
				n := ns.(*namespace)
				return newServerClock(t, srv, srv.open(t, n.dsn))
			},
		})
	})
}

// serverClock reads and moves expires_at in the lease table, and checks on the way that
// every statement the backends send lets the server's clock judge expiry.
type serverClock struct {
	srv   server
	admin *sql.DB // bypasses the proxies
}

// newServerClock starts recording the backends' statements; at the end of the test it
// checks them.
func newServerClock(t *testing.T, srv server, admin *sql.DB) serverClock {
	var mu sync.Mutex
	var stmts []string
	restore := sqllock.SetStatementHook(func(q string, args []any) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range args {
			switch a.(type) {
			case string, int64:
			default:
				t.Errorf("argument %v of type %T sent with %q", a, a, q)
			}
		}
		stmts = append(stmts, q)
	})
	t.Cleanup(func() {
		restore()
		mu.Lock()
		defer mu.Unlock()
		checkServerClockStatements(t, srv, stmts)
	})
	return serverClock{srv: srv, admin: admin}
}

// CheckExpiry: the row's expiry was computed by the server, about TTL from its now.
func (c serverClock) CheckExpiry(t *testing.T, key string, l *lockclient.Lease, ttl time.Duration) {
	var left float64
	q := `SELECT extract(epoch FROM expires_at - clock_timestamp()) FROM fencedsql_locks WHERE lock_key = $1`
	if c.srv.dialect == sqllock.MySQL {
		q = `SELECT TIMESTAMPDIFF(MICROSECOND, ` + myClock + `, expires_at) / 1e6 FROM fencedsql_locks WHERE lock_key = ?`
	}
	if err := c.admin.QueryRowContext(ctxT(t, 10*time.Second), q, key).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left <= ttl.Seconds()-5 || left > ttl.Seconds() {
		t.Fatalf("expires_at - server now = %.3fs, want about %v", left, ttl)
	}
}

// Expire moves the server's judgement one hour ahead, as a server clock would: the
// client's deadline is still far away, but the grant is now expired.
func (c serverClock) Expire(t *testing.T, key string) {
	shift := `UPDATE fencedsql_locks SET expires_at = expires_at - interval '1 hour' WHERE lock_key = $1`
	if c.srv.dialect == sqllock.MySQL {
		shift = `UPDATE fencedsql_locks SET expires_at = expires_at - INTERVAL 1 HOUR WHERE lock_key = ?`
	}
	if _, err := c.admin.ExecContext(ctxT(t, 10*time.Second), shift, key); err != nil {
		t.Fatal(err)
	}
}

// myClock is sqllock's MySQL clock (red-team rt41c F1): not the session's @@timestamp.
const myClock = "CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00')"

// checkServerClockStatements checks that every write takes its time from the server's
// clock function that does not depend on the transaction or the session's time zone.
func checkServerClockStatements(t *testing.T, srv server, stmts []string) {
	clock := "pg_catalog.clock_timestamp()"
	if srv.dialect == sqllock.MySQL {
		clock = "CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00')"
	}
	kinds := map[string]bool{}
	for _, q := range stmts {
		up := strings.ToUpper(q)
		switch {
		case strings.HasPrefix(up, "CALL"):
			kinds["grant"] = true // the procedure, checked below
		case strings.Contains(up, "INSERT"), strings.HasPrefix(up, "UPDATE"):
			kinds["write"] = true
			if !strings.Contains(q, clock) {
				t.Errorf("statement without the server clock %s: %s", clock, q)
			}
		}
		for _, bad := range []string{"NOW()", "CURRENT_TIMESTAMP", "LOCALTIMESTAMP", "UTC_TIMESTAMP"} {
			if strings.Contains(up, bad) {
				t.Errorf("statement uses %s (transaction/statement-start or session-zone time): %s", bad, q)
			}
		}
	}
	if srv.dialect == sqllock.MySQL {
		ddl, err := sqllock.DDL(sqllock.MySQL, "")
		if err != nil {
			t.Fatal(err)
		}
		procs := 0
		for _, proc := range ddl {
			if !strings.HasPrefix(proc, "CREATE PROCEDURE") {
				continue
			}
			procs++
			// A procedure that reads a lease's expiry judges it by the server's clock; one
			// given a TTL sets it from that clock.
			if strings.Contains(proc, "UTC_TIMESTAMP") || strings.Contains(proc, "NOW(") ||
				strings.Contains(proc, "expires_at") && !strings.Contains(proc, "expires_at > "+myClock) ||
				strings.Contains(proc, "p_ttl_us") && !strings.Contains(proc, myClock+" + INTERVAL p_ttl_us MICROSECOND") {
				t.Errorf("procedure does not judge expiry by the server's clock %s:\n%s", myClock, proc)
			}
		}
		if procs != 6 { // grant v1 and v2, renew, release, leave, abandon
			t.Errorf("DDL has %d procedures, want 6", procs)
		}
	}
	if len(stmts) < 4 {
		t.Fatalf("hook saw %d statements", len(stmts))
	}
}

// Clients whose sessions use different time zones agree on expiry: the lease table
// holds absolute times (timestamptz; UTC DATETIME from the server's clock on MySQL).
func TestSessionTimeZonesAgree(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		t.Parallel()
		n := newNamespace(t, srv)
		ctx := ctxT(t, 30*time.Second)
		tz := func(zone string) map[string]string {
			if srv.dialect == sqllock.Postgres {
				return map[string]string{"timezone": zone}
			}
			return map[string]string{"time_zone": "'" + zone + "'"}
		}
		east, west := "+09:00", "-07:00"
		if srv.dialect == sqllock.Postgres {
			east, west = "Asia/Tokyo", "America/Los_Angeles"
		}
		ttl := 400 * time.Millisecond
		a := locktest.OpenSession(t, n.backend("a", tz(east)), "a", ttl)
		b := locktest.OpenSession(t, n.backend("b", tz(west)), "b", ttl)
		for _, pair := range [][2]lockclient.Session{{a, b}, {b, a}} {
			holder, other := pair[0], pair[1]
			g, err := holder.TryAcquire(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
				t.Fatalf("TryAcquire of a live lease from another time zone = %v, want ErrHeld", err)
			}
			if err := holder.Renew(ctx, g); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			time.Sleep(ttl + 100*time.Millisecond)
			g2, err := other.TryAcquire(ctx, "k")
			if err != nil {
				t.Fatalf("TryAcquire of an expired lease from another time zone: %v", err)
			}
			if err := other.Release(ctx, g2); err != nil {
				t.Fatal(err)
			}
		}
	})
}
