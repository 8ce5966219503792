package sqllock_test

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

// A row lock on one key's lease row (a slow renewal or release, an operator's SELECT …
// FOR UPDATE) delays the grants of that key until it is gone, and only those: the grant
// waits for it before it takes the table-wide lock (issue 21 item 3).

const rowHold = 1500 * time.Millisecond

// otherKeyBound bounds a grant of another key while k's row is locked. A grant that
// waited for k's row would not return before the test releases it at all; the bound
// catches a grant delayed by k's retries (each takes the table-wide advisory lock for a
// moment), with room for a loaded 2-core CI machine (2 s seen there, ci83).
const otherKeyBound = 5 * time.Second

// lockRow starts a transaction on admin that holds key's lease row FOR UPDATE.
func lockRow(t *testing.T, srv server, admin *sql.DB, key string) *sql.Tx {
	t.Helper()
	ctx := ctxT(t, 60*time.Second)
	tx, err := admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := "SELECT 1 FROM fencedsql_locks WHERE lock_key = $1 FOR UPDATE"
	if srv.dialect == sqllock.MySQL {
		q = "SELECT 1 FROM fencedsql_locks WHERE lock_key = ? FOR UPDATE"
	}
	var one int
	if err := tx.QueryRowContext(ctx, q, key).Scan(&one); err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	return tx
}

// waitBlocked waits until some statement of the server waits for a lock.
func waitBlocked(t *testing.T, srv server, admin *sql.DB) {
	t.Helper()
	q := "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
	if srv.dialect == sqllock.MySQL {
		// MariaDB lists a transaction in innodb_trx only once it has written: the grant's
		// locking read of k's row (SELECT … FOR UPDATE, a const read done by the
		// optimizer) waits in a read-only transaction that is often not listed, its
		// thread shown in the processlist as "Statistics" for as long as the row is
		// locked. So a grant CALL running for a second or more counts as waiting too
		// (the grants of other keys take milliseconds); the checks that follow prove it
		// was waiting for k's row: it ends within a second of the row's release.
		q = "SELECT (SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT')" +
			" + (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'CALL %grant%' AND TIME >= 1)"
	}
	// Generous: under load (CI) the grant has been seen to reach its row-lock wait only
	// after several seconds.
	deadline := time.Now().Add(25 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := admin.QueryRowContext(ctxT(t, 10*time.Second), q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no statement waits for a lock")
}

// expiredKey grants key with a short TTL and waits until the lease expired: the row
// stays, expired.
func expiredKey(t *testing.T, b *sqllock.Backend, key string) {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	s, err := b.Open(ctx, "expired", 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if _, err := s.TryAcquire(ctx, key); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
}

type tryResult struct {
	g   lockclient.Grant
	err error
	at  time.Time
}

func tryAsync(ctx context.Context, s lockclient.Session, key string) <-chan tryResult {
	ch := make(chan tryResult, 1)
	go func() {
		g, err := s.TryAcquire(ctx, key)
		ch <- tryResult{g, err, time.Now()}
	}()
	return ch
}

// checkRowLockOneKey: while key "k"'s row is locked, TryAcquire("k") waits; grants of
// other keys (an expired row, a new key) complete at once; TryAcquire("k") is granted
// right after the row lock is gone, with a token above theirs.
func checkRowLockOneKey(t *testing.T, srv server, admin *sql.DB, b *sqllock.Backend, tx *sql.Tx) {
	ctx := ctxT(t, 60*time.Second)
	s, err := b.Open(ctx, "app", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	waiting := tryAsync(ctx, s, "k")
	waitBlocked(t, srv, admin)
	var last uint64
	for i, key := range []string{"other-expired", fmt.Sprint("new-", time.Now().UnixNano())} {
		start := time.Now()
		g, err := s.TryAcquire(ctx, key)
		if err != nil {
			t.Fatalf("TryAcquire(%q) while k's row is locked: %v", key, err)
		}
		if d := time.Since(start); d > otherKeyBound {
			t.Errorf("TryAcquire(%q) took %v while k's row was locked: grants of other keys are delayed", key, d)
		}
		if i > 0 && g.Token <= last {
			t.Errorf("token %d after %d", g.Token, last)
		}
		last = g.Token
	}
	select {
	case r := <-waiting:
		t.Fatalf("TryAcquire(k) returned %v, %v while k's row was locked", r.g, r.err)
	default:
	}
	time.Sleep(rowHold - 500*time.Millisecond)
	released := time.Now()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-waiting
	if r.err != nil {
		t.Fatalf("TryAcquire(k) after the row lock: %v", r.err)
	}
	if d := r.at.Sub(released); d > time.Second {
		t.Errorf("TryAcquire(k) granted %v after the row lock was released, want < 1s", d)
	}
	if r.g.Token <= last {
		t.Errorf("k's token %d is not above the other grants' %d", r.g.Token, last)
	}
	t.Logf("k granted %v after the row lock was released", r.at.Sub(released))
}

func TestRowLockDelaysOnlyItsKey(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		expiredKey(t, b, "k")
		expiredKey(t, b, "other-expired")
		checkRowLockOneKey(t, srv, admin, b, lockRow(t, srv, admin, "k"))
	})
}

// TestRowLockAppearedUnderTableLock: the key had no row when the grant looked, and one
// granted meanwhile is row-locked by another transaction when the grant holds the
// advisory lock: the grant gives up (55P03), calls again, and waits outside the
// advisory lock.
func TestRowLockAppearedUnderTableLock(t *testing.T) {
	srv := servers[0]
	dsn, admin := srv.fresh(t, "")
	b, err := sqllock.New(srv.open(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	expiredKey(t, b, "other-expired")
	ctx := ctxT(t, 30*time.Second)
	adv, err := admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adv.Rollback()
	if _, err := adv.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1, 1)", sqllock.AdvisoryClass("")); err != nil {
		t.Fatal(err)
	}
	s, err := b.Open(ctx, "app", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	waiting := tryAsync(ctx, s, "k") // finds no row of k, waits for the advisory lock
	waitBlocked(t, srv, admin)
	if _, err := admin.ExecContext(ctx, `INSERT INTO fencedsql_locks (lock_key, owner, session_id, token, expires_at)
VALUES ('k', 'x', 'x', 0, clock_timestamp() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	tx := lockRow(t, srv, admin, "k")
	if err := adv.Commit(); err != nil {
		t.Fatal(err)
	}
	// TryAcquire(k) retries until it waits for k's row, outside the advisory lock.
	time.Sleep(100 * time.Millisecond)
	checkRowLockOneKeyWaiting(t, srv, admin, s, tx, waiting)
}

// checkRowLockOneKeyWaiting is checkRowLockOneKey for a TryAcquire("k") already running.
func checkRowLockOneKeyWaiting(t *testing.T, srv server, admin *sql.DB, s lockclient.Session, tx *sql.Tx, waiting <-chan tryResult) {
	ctx := ctxT(t, 30*time.Second)
	start := time.Now()
	g, err := s.TryAcquire(ctx, "other-expired")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > otherKeyBound {
		t.Errorf("TryAcquire(other-expired) took %v while k's row was locked", d)
	}
	released := time.Now()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-waiting
	if r.err != nil {
		t.Fatalf("TryAcquire(k): %v", r.err)
	}
	if d := r.at.Sub(released); d > time.Second {
		t.Errorf("TryAcquire(k) granted %v after the row lock was released", d)
	}
	if r.g.Token <= g.Token {
		t.Errorf("k's token %d is not above %d", r.g.Token, g.Token)
	}
}

// TestGrantProcedureUpgraded: on MySQL a grant procedure of an earlier revision (which
// waits for the key's row while holding the counter) is reported by CheckTable as
// outdated and replaced by CreateTable.
func TestGrantProcedureUpgraded(t *testing.T) {
	srv := servers[1]
	dsn, admin := srv.fresh(t, "")
	ctx := ctxT(t, 30*time.Second)
	b, err := sqllock.New(srv.open(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.CheckTable(ctx); err != nil {
		t.Fatalf("CheckTable after CreateTable: %v", err)
	}
	if _, err := admin.ExecContext(ctx, "ALTER PROCEDURE fencedsql_locks_grant_v2 COMMENT 'fencedsql sqllock: an earlier revision'"); err != nil {
		t.Fatal(err)
	}
	err = b.CheckTable(ctx)
	var se *sqllock.SchemaError
	if !errors.As(err, &se) || !se.Outdated || !strings.Contains(err.Error(), "sqllock.CreateTable") {
		t.Fatalf("CheckTable of an old grant procedure: %v, want an outdated *SchemaError naming CreateTable", err)
	}
	if err := sqllock.CreateTable(ctx, admin, srv.dialect, ""); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckTable(ctx); err != nil {
		t.Fatalf("CheckTable after the upgrade: %v", err)
	}
}
