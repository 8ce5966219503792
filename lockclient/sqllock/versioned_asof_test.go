package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// MariaDB's system_versioning_asof moves every SELECT of a system-versioned table to
// another time, locking reads and stored procedures included (red-team rt50b F1): the
// lease, counter and waiter tables must be read as they are now whatever the session
// says (sqllock's myAsOfNow).

// asOfNow returns the server's present time (text), between two short pauses, so that a
// grant before the call and one after it are told apart by system versioning.
func asOfNow(t *testing.T, ctx context.Context, admin interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) string {
	t.Helper()
	time.Sleep(30 * time.Millisecond)
	var at string
	if err := admin.QueryRowContext(ctx, "SELECT CAST(NOW(6) AS CHAR)").Scan(&at); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	return at
}

// asOfBackend returns a backend on dsn whose every session has system_versioning_asof
// at (a DSN parameter: go-sql-driver/mysql sends it as SET).
func asOfBackend(t *testing.T, srv server, dsn, at string) *sqllock.Backend {
	t.Helper()
	b, err := sqllock.New(srv.open(t, dsn+"&system_versioning_asof="+url.QueryEscape("'"+at+"'")), sqllock.WithDialect(srv.dialect))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A system-versioned token counter (lease and waiter tables too) and a lock pool whose sessions carry
// system_versioning_asof from before tokens 2–4 were granted: the next grant still gets
// a token above 4 (G14), and LastToken, RaiseFloor and Retire through that pool read
// the counter as it is now (a failover's floor is LastToken+1).
func TestVersionedCounterAsOfTokenNeverBack(t *testing.T) {
	srv := servers[1]
	dsn, admin := srv.fresh(t, "")
	ctx := ctxT(t, 60*time.Second)
	for _, tb := range []string{"fencedsql_locks_token", "fencedsql_locks", "fencedsql_locks_waiters"} {
		testdb.Exec(t, admin, "ALTER TABLE "+tb+" ADD SYSTEM VERSIONING")
	}
	b, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
	if err != nil {
		t.Fatal(err)
	}
	c := lockclient.New(b, lockclient.WithTTL(30*time.Second))
	defer c.Close(context.Background())
	locktest.Grant(t, ctx, c, "a")
	at := asOfNow(t, ctx, admin)
	var last uint64
	for _, k := range []string{"b", "c", "d"} {
		last = locktest.Grant(t, ctx, c, k)
	}
	b2 := asOfBackend(t, srv, dsn, at)
	if err := b2.CheckTable(ctx); err != nil {
		t.Fatalf("CheckTable through a session with system_versioning_asof: %v", err)
	}
	if got, err := b2.LastToken(ctx); err != nil || got != last {
		t.Fatalf("LastToken through a session with system_versioning_asof = (%d, %v), want %d", got, err, last)
	}
	c2 := lockclient.New(b2, lockclient.WithTTL(30*time.Second))
	defer c2.Close(context.Background())
	if tok := locktest.Grant(t, ctx, c2, "e"); tok <= last {
		t.Fatalf("a lease granted after token %d through a session with system_versioning_asof got token %d: the counter was read as of %s", last, tok, at)
	} else {
		last = tok
	}
	if err := b2.RaiseFloor(ctx, last+10); err != nil {
		t.Fatal(err)
	}
	if got, err := b2.LastToken(ctx); err != nil || got != last+10 {
		t.Fatalf("LastToken after RaiseFloor(%d) = (%d, %v), want %d", last+10, got, err, last+10)
	}
	got, err := b2.Retire(ctx)
	if err != nil || got != last+10 {
		t.Fatalf("Retire through a session with system_versioning_asof = (%d, %v), want %d", got, err, last+10)
	}
	if got, retired, err := b.Retired(ctx); err != nil || !retired || got != last+10 {
		t.Fatalf("Retired = (%d, %v, %v), want (%d, true)", got, retired, err, last+10)
	}
}

// A system-versioned lease table and a lock pool whose sessions carry
// system_versioning_asof from before holder 1 acquired k: the second Acquire of k
// waits (no second owner), and that pool's own grant and release of k are seen by
// the other pool at once.
func TestVersionedLeaseTableAsOfNoDoubleGrant(t *testing.T) {
	srv := servers[1]
	dsn, admin := srv.fresh(t, "")
	ctx := ctxT(t, 60*time.Second)
	testdb.Exec(t, admin, "ALTER TABLE fencedsql_locks ADD SYSTEM VERSIONING")
	at := asOfNow(t, ctx, admin)
	b, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
	if err != nil {
		t.Fatal(err)
	}
	c := lockclient.New(b, lockclient.WithTTL(30*time.Second))
	defer c.Close(context.Background())
	l1, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	c2 := lockclient.New(asOfBackend(t, srv, dsn, at), lockclient.WithTTL(30*time.Second))
	defer c2.Close(context.Background())
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if l2, err := c2.Acquire(actx, "k"); err == nil {
		t.Fatalf("key k granted to a second owner (token %d) while the first holds it (token %d): the lease row was read as of %s", l2.Token(), l1.Token(), at)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Logf("second Acquire while held: %v", err)
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	locktest.Grant(t, ctx, c2, "k") // granted, then released through the pool with system_versioning_asof
	actx2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	l3, err := c.Acquire(actx2, "k")
	if err != nil {
		t.Fatalf("Acquire after the release through the session with system_versioning_asof: %v (the release read an old version of the row and deleted nothing)", err)
	}
	_ = l3.Release(ctx)
}

// The procedures of a table created before the fix (their SELECTs read as of the
// session's system_versioning_asof) are reported by CheckTable as Outdated and
// replaced by CreateTable, after which a pool with system_versioning_asof no longer
// gets a token back.
func TestVersionedAsOfProceduresUpgraded(t *testing.T) {
	srv := servers[1]
	dsn, admin := srv.fresh(t, "")
	ctx := ctxT(t, 60*time.Second)
	ddl, err := sqllock.DDL(srv.dialect, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(ddl, sqllock.DDLv1(srv.dialect, "")...) {
		if !strings.HasPrefix(s, "CREATE PROCEDURE") || !strings.Contains(s, sqllock.AsOfNow) {
			continue
		}
		s = strings.ReplaceAll(s, sqllock.AsOfNow, "")
		for _, r := range [][2]string{{"; rev 6'", "; rev 5'"}, {"0 if held; rev 4'", "0 if held; rev 3'"}, {"; rev 3'", "; rev 2'"}} {
			if strings.Contains(s, r[0]) {
				s = strings.Replace(s, r[0], r[1], 1)
				break
			}
		}
		testdb.Exec(t, admin, strings.Replace(s, "CREATE PROCEDURE", "CREATE OR REPLACE PROCEDURE", 1))
	}
	testdb.Exec(t, admin, "ALTER TABLE fencedsql_locks_token ADD SYSTEM VERSIONING")
	b, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
	if err != nil {
		t.Fatal(err)
	}
	var se *sqllock.SchemaError
	if err := b.CheckTable(ctx); !errors.As(err, &se) || !se.Outdated {
		t.Fatalf("CheckTable of the procedures before the fix = %v, want a *SchemaError with Outdated", err)
	}
	for _, name := range []string{"_grant_v2", "_grant_v1", "_renew_v2", "_release_v2"} {
		if !strings.Contains(se.Error(), "fencedsql_locks"+name) {
			t.Errorf("CheckTable does not name procedure %s as outdated: %v", name, se)
		}
	}
	if err := sqllock.CreateTable(ctx, admin, srv.dialect, ""); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckTable(ctx); err != nil {
		t.Fatalf("CheckTable after CreateTable: %v", err)
	}
	c := lockclient.New(b, lockclient.WithTTL(30*time.Second))
	defer c.Close(context.Background())
	locktest.Grant(t, ctx, c, "a")
	at := asOfNow(t, ctx, admin)
	last := locktest.Grant(t, ctx, c, "b")
	c2 := lockclient.New(asOfBackend(t, srv, dsn, at), lockclient.WithTTL(30*time.Second))
	defer c2.Close(context.Background())
	if tok := locktest.Grant(t, ctx, c2, "c"); tok <= last {
		t.Fatalf("after the upgrade, a lease granted after token %d got token %d", last, tok)
	}
}

// Every SELECT of the lease, counter and waiter tables in the MySQL stored procedures
// reads the present (sqllock.AsOfNow), whatever the session's system_versioning_asof;
// LastToken, RaiseFloor, Retire and CheckTable are checked at the server above.
func TestMySQLSelectsReadNow(t *testing.T) {
	ddl, err := sqllock.DDL(sqllock.MySQL, "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range append(ddl, sqllock.DDLv1(sqllock.MySQL, "")...) {
		if !strings.HasPrefix(s, "CREATE PROCEDURE") {
			continue
		}
		lines := strings.Split(s, "\n")
		for i, line := range lines {
			tr := strings.TrimSpace(line)
			if strings.HasPrefix(tr, sqllock.AsOfNow) {
				n++
				continue
			}
			if !strings.HasPrefix(tr, "SELECT ") {
				continue
			}
			stmt := strings.Join(lines[i:], "\n")
			stmt = stmt[:strings.Index(stmt, ";")]
			if strings.Contains(stmt, " FROM `") {
				t.Errorf("a SELECT of a table without %q (it would read as of a session's system_versioning_asof):\n%s", sqllock.AsOfNow, stmt)
			}
		}
	}
	if n == 0 {
		t.Fatal("no SELECT of a table found in the procedures")
	}
}
