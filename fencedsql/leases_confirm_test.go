// Several leases bound together: the smaller-token leases are confirmed at the lock
// service after the largest was granted (leaseproof.go; red-team rt45f F2).

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/redis/go-redis/v9"
)

// confirmDB opens a SQLite database with accounts 1 (balance 100) and 2 (200) in a
// guarded table: the plain pool and the fenced one.
func confirmDB(t *testing.T) (raw, db *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.db")
	raw = testdb.Open(t, "sqlite", "file:"+path,
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 200)`)
	return raw, testdb.Open(t, sqlite.DriverName, "file:"+path+"?fenced_tables=accounts")
}

// row1 returns account 1's balance and token.
func row1(t *testing.T, raw *sql.DB) (bal, tok int64) {
	t.Helper()
	if err := raw.QueryRow(`SELECT balance, fence_token FROM accounts WHERE id = 1`).Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	return bal, tok
}

// A lease the service expired while its client has not noticed (its local deadline not
// passed: a pause or a forced expiry the client cannot see) is re-granted to a new
// holder, which writes its row; the old client then takes a second lock, with a larger
// token, and binds both leases — by WithLeases, by nested WithLease, or by a statement
// lease joining a transaction begun under the stale one. The write of the first lock's
// row is refused with ErrLeaseLost, nothing sent, where it used to carry the larger
// token over the new holder's (red-team rt45f F2).
func TestStaleLeaseBesideNewerLeaseRefused(t *testing.T) {
	for _, how := range []string{"WithLeases", "nested WithLease", "statement lease joins tx"} {
		t.Run(how, func(t *testing.T) { staleBesideNewer(t, how) })
	}
}

func staleBesideNewer(t *testing.T, how string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, db := confirmDB(t)
	l1, n1, l2 := staleWindow(t, ctx, db)

	err := func() error {
		var begin, s1, s2 context.Context
		switch how {
		case "WithLeases":
			begin = fencedsql.WithLeases(ctx, l1, l2)
			s1, s2 = ctx, ctx
		case "nested WithLease":
			begin = fencedsql.WithLease(fencedsql.WithLease(ctx, l1), l2)
			s1, s2 = ctx, ctx
		default:
			begin = fencedsql.WithLease(ctx, l1)
			s1, s2 = fencedsql.WithLease(ctx, l2), fencedsql.WithLease(ctx, l2)
		}
		tx, err := db.BeginTx(begin, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck
		if _, err := tx.ExecContext(s2, `UPDATE accounts SET balance = balance + 50 WHERE id = 2`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(s1, `UPDATE accounts SET balance = balance - 50 WHERE id = 1`); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Errorf("stale lease (token %d) bound beside token %d: %v, want ErrLeaseLost", l1.Token(), l2.Token(), err)
	}
	if bal, tok := row1(t, raw); bal != 111 || tok != int64(n1.Token()) {
		t.Errorf("row 1: balance %d, token %d; want the current holder's 111, token %d", bal, tok, n1.Token())
	}
	if l1.Err() == nil {
		t.Errorf("the refused confirmation did not declare the stale lease lost")
	}
}

// With Redis: the lock key deleted at the server (an operator's force-unlock, a
// failover to a replica that had not received it) while client 1 still trusts its
// lease; a statement outside a transaction under WithLeases(stale, newer) is refused.
func TestForceReleasedLeaseBesideNewerRefused(t *testing.T) {
	addr, prefix := testdb.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	raw, db := confirmDB(t)
	be := func() *redislock.Backend { return redislock.New(rdb, redislock.WithPrefix(prefix)) }
	c1 := lockclient.New(be(), lockclient.WithTTL(30*time.Second))
	c2 := lockclient.New(be(), lockclient.WithTTL(30*time.Second))
	t.Cleanup(func() { _ = c1.Close(context.Background()); _ = c2.Close(context.Background()) })
	l1, err := c1.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, prefix+"*account:1*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("lock keys: %v %v", keys, err)
	}
	if err := rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	n1, err := c2.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithLease(ctx, n1), `UPDATE accounts SET balance = 111 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	l2, err := c1.Acquire(ctx, "account:2")
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithLeases(ctx, l1, l2), `UPDATE accounts SET balance = balance - 50 WHERE id = 1`)
	if !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Errorf("force-released lease (token %d) beside token %d: %v, want ErrLeaseLost", l1.Token(), l2.Token(), err)
	}
	if bal, _ := row1(t, raw); bal != 111 {
		t.Errorf("row 1 balance %d, want the current holder's 111", bal)
	}
}

// Two held leases: the smaller is confirmed once per binding (one renewal round trip
// at the first BeginTx), not per statement nor per transaction begun under the same
// context; a binding of one lease costs none.
func TestHeldLeasesConfirmedOncePerBinding(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, db := confirmDB(t)
	svc, held := heldLeases(t, ctx, "account:1", "account:2")
	l1, l2 := held[0], held[1]
	before := svc.Renewals()
	if _, err := db.ExecContext(fencedsql.WithLease(ctx, l1), `UPDATE accounts SET balance = 100 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if n := svc.Renewals() - before; n != 0 {
		t.Fatalf("one lease: %d renewals, want none", n)
	}
	both := fencedsql.WithLeases(ctx, l1, l2)
	for range 2 {
		tx, err := db.BeginTx(both, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`UPDATE accounts SET balance = balance - 1 WHERE id = 1`, `UPDATE accounts SET balance = balance + 1 WHERE id = 2`} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(both, `UPDATE accounts SET balance = balance - 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if n := svc.Renewals() - before; n != 1 {
		t.Errorf("two leases, two transactions and a statement under one binding: %d renewals, want 1", n)
	}
	if bal, tok := row1(t, raw); bal != 97 || tok != int64(l2.Token()) {
		t.Errorf("row 1: balance %d, token %d; want 97, token %d", bal, tok, l2.Token())
	}
}

// heldLeases acquires one lease per name on a new in-memory lock service, through a
// client whose TTL (a minute) keeps its watchdog from renewing during a test: the
// service's Renewals count only the wrapper's confirmations.
func heldLeases(t *testing.T, ctx context.Context, names ...string) (*memlock.Service, []*lockclient.Lease) {
	t.Helper()
	svc := memlock.New()
	c := lockclient.New(svc, lockclient.WithTTL(time.Minute))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	leases := make([]*lockclient.Lease, len(names))
	for i, name := range names {
		l, err := c.Acquire(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = l
	}
	return svc, leases
}

// plainLease is a Lease that does not implement fencedsql.LeaseConfirmer.
type plainLease struct{ tok uint64 }

func (l *plainLease) Token() uint64         { return l.tok }
func (l *plainLease) Lost() <-chan struct{} { return nil }
func (l *plainLease) Err() error            { return nil }

// A lease that cannot be confirmed (no LeaseConfirmer) bound beside a larger token is
// refused with ErrUnsupported, nothing sent: fail closed. Beside a smaller token, or
// alone, it is not asked anything.
func TestUnconfirmableLeaseBesideLargerRefused(t *testing.T) {
	ctx := context.Background()
	raw, db := confirmDB(t)
	small, big := &plainLease{tok: 5}, &plainLease{tok: 9}
	if _, err := db.BeginTx(fencedsql.WithLeases(ctx, small, big), nil); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("BeginTx: %v, want ErrUnsupported", err)
	}
	if _, err := db.ExecContext(fencedsql.WithLease(fencedsql.WithLease(ctx, big), small), `UPDATE accounts SET balance = 0 WHERE id = 1`); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("statement: %v, want ErrUnsupported", err)
	}
	if bal, _ := row1(t, raw); bal != 100 {
		t.Errorf("row 1 balance %d, want 100 (nothing written)", bal)
	}
	if _, err := db.ExecContext(fencedsql.WithLease(ctx, big), `UPDATE accounts SET balance = 0 WHERE id = 1`); err != nil {
		t.Errorf("alone: %v", err)
	}
}
