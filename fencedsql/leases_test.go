package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	_ "github.com/fencedsql/fencedsql/dialects/postgres" // "fenced-pgx"
	_ "github.com/fencedsql/fencedsql/dialects/sqlite"   // "fenced-sqlite", "sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// transferDB is a database with two accounts (1: 100, 2: 0) in a guarded table.
type transferDB struct {
	name      string
	db, admin *sql.DB
	ph        func(int) string
}

func transferDBs(t *testing.T) []transferDB {
	t.Helper()
	const ddl = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`
	open := func(name, plain, fenced, dsn, fdsn string, ph func(int) string) transferDB {
		admin, err := sql.Open(plain, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Close() })
		for _, q := range []string{ddl, `INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 0)`} {
			if _, err := admin.Exec(q); err != nil {
				t.Fatalf("%s: %s: %v", name, q, err)
			}
		}
		db, err := sql.Open(fenced, fdsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return transferDB{name: name, db: db, admin: admin, ph: ph}
	}
	lite := testdb.SQLite(t)
	out := []transferDB{open("sqlite", "sqlite", "fenced-sqlite", lite, lite+"&fenced_tables=accounts", func(int) string { return "?" })}
	if testdb.RequireServers() || os.Getenv("FENCEDSQL_PG_DSN") != "" {
		pg := testdb.Postgres(t)
		out = append(out, open("postgres", "pgx", "fenced-pgx", pg, pgParam(pg, "fenced_tables=accounts"), func(i int) string { return "$" + strconv.Itoa(i) }))
	} else {
		t.Log("FENCEDSQL_PG_DSN not set: PostgreSQL case skipped")
	}
	return out
}

// twoLeases takes lock "account:1" in process A1 (the smaller token) and "account:2"
// in process A2 on one memlock service, and returns a function that makes A1's lease
// lost by fault injection: the service stops hearing A1 (Pause) and A1's client gives
// the lease up at its local deadline.
func twoLeases(t *testing.T) (l1, l2 *lockclient.Lease, lose1 func()) {
	t.Helper()
	svc, l1, l2 := twoLeasesOneService(t, 300*time.Millisecond)
	return l1, l2, func() {
		svc.Pause("A1")
		select {
		case <-l1.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("lease A1 not lost")
		}
		if l2.Err() != nil {
			t.Fatalf("lease A2 lost too: %v", l2.Err())
		}
	}
}

// twoLeasesOneService takes lock "account:1" in process A1 (the smaller token) and
// "account:2" in process A2 on a new memlock service, both with lease TTL ttl; the
// service's Pause("A1") stalls A1's client.
func twoLeasesOneService(t *testing.T, ttl time.Duration) (svc *memlock.Service, l1, l2 *lockclient.Lease) {
	t.Helper()
	ctx := context.Background()
	svc = memlock.New()
	c1 := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithOwner("A1"))
	c2 := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithOwner("A2"))
	t.Cleanup(func() {
		svc.Resume("A1")
		_ = c1.Close(ctx)
		_ = c2.Close(ctx)
	})
	var err error
	if l1, err = c1.Acquire(ctx, "account:1"); err != nil {
		t.Fatal(err)
	}
	if l2, err = c2.Acquire(ctx, "account:2"); err != nil {
		t.Fatal(err)
	}
	if l1.Token() >= l2.Token() {
		t.Fatalf("tokens %d, %d: want the lease to lose to carry the smaller one", l1.Token(), l2.Token())
	}
	return svc, l1, l2
}

func balances(t *testing.T, d transferDB) (b1, b2, tok1, tok2 int64) {
	t.Helper()
	rows, err := d.admin.Query(`SELECT balance, fence_token FROM accounts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got [2][2]int64
	for i := 0; rows.Next(); i++ {
		if err := rows.Scan(&got[i][0], &got[i][1]); err != nil {
			t.Fatal(err)
		}
	}
	return got[0][0], got[1][0], got[0][1], got[1][1]
}

// transferSQL is the two statements of a transfer of 10 from account 1 to account 2.
func transferSQL(d transferDB) [2]string {
	return [2]string{
		`UPDATE accounts SET balance = balance - 10 WHERE id = ` + d.ph(1),
		`UPDATE accounts SET balance = balance + 10 WHERE id = ` + d.ph(1),
	}
}

// WithLeases binds the largest token: a transfer under two held leases commits with
// it stamped on both rows.
func TestWithLeasesLargestToken(t *testing.T) {
	for _, d := range transferDBs(t) {
		t.Run(d.name, func(t *testing.T) {
			l1, l2, _ := twoLeases(t)
			ctx := fencedsql.WithLeases(context.Background(), l1, l2)
			if tok, _ := fencedsql.TokenFrom(ctx); tok != l2.Token() {
				t.Fatalf("TokenFrom = %d, want the largest, %d", tok, l2.Token())
			}
			tx, err := d.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			q := transferSQL(d)
			for i, id := range []int{1, 2} {
				if _, err := tx.ExecContext(ctx, q[i], id); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			b1, b2, t1, t2 := balances(t, d)
			if b1 != 90 || b2 != 10 || uint64(t1) != l2.Token() || uint64(t2) != l2.Token() {
				t.Fatalf("balances %d, %d tokens %d, %d; want 90, 10 with token %d on both", b1, b2, t1, t2, l2.Token())
			}
		})
	}
	t.Run("nil lease", func(t *testing.T) {
		if _, ok := fencedsql.TokenFrom(fencedsql.WithLeases(context.Background(), newFakeLease(7), nil)); ok {
			t.Fatal("a nil lease among the leases carries a token")
		}
		if _, ok := fencedsql.TokenFrom(fencedsql.WithLeases(context.Background())); ok {
			t.Fatal("no leases carries a token")
		}
	})
}

// A transfer under two leases, one of which (the smaller token's) is lost, commits
// nothing: in autocommit each statement is refused; in a transaction the statement
// after the loss and Commit are refused. The control binds only the held lease with
// the larger token — what a caller had to do before WithLeases — and the same
// transfer commits: the loss of the other lock is what WithLeases catches.
func TestWithLeasesOneLost(t *testing.T) {
	for _, d := range transferDBs(t) {
		t.Run(d.name, func(t *testing.T) {
			q := transferSQL(d)
			t.Run("autocommit", func(t *testing.T) {
				l1, l2, lose1 := twoLeases(t)
				ctx := fencedsql.WithLeases(context.Background(), l1, l2)
				lose1()
				for i, id := range []int{1, 2} {
					_, err := d.db.ExecContext(ctx, q[i], id)
					if !errors.Is(err, lockclient.ErrLeaseLost) || !errors.Is(err, fencedsql.ErrNotCommitted) {
						t.Fatalf("statement %d: err = %v, want ErrLeaseLost and ErrNotCommitted", i+1, err)
					}
				}
				if b1, b2, _, _ := balances(t, d); b1 != 100 || b2 != 0 {
					t.Fatalf("balances %d, %d: something committed", b1, b2)
				}
			})
			t.Run("transaction", func(t *testing.T) {
				l1, l2, lose1 := twoLeases(t)
				ctx := fencedsql.WithLeases(context.Background(), l1, l2)
				tx, err := d.db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if _, err := tx.ExecContext(ctx, q[0], 1); err != nil {
					t.Fatal(err)
				}
				lose1()
				// The statement's own context carries nothing: the transaction's leases count.
				if _, err := tx.ExecContext(context.Background(), q[1], 2); !errors.Is(err, lockclient.ErrLeaseLost) {
					t.Fatalf("statement after the loss: err = %v, want ErrLeaseLost", err)
				}
				err = tx.Commit()
				if !errors.Is(err, lockclient.ErrLeaseLost) || !errors.Is(err, fencedsql.ErrNotCommitted) ||
					fencedsql.CommitOutcome(err) != fencedsql.NotCommitted {
					t.Fatalf("Commit: err = %v, want ErrLeaseLost, not committed", err)
				}
				if b1, b2, _, _ := balances(t, d); b1 != 100 || b2 != 0 {
					t.Fatalf("balances %d, %d: something committed", b1, b2)
				}
			})
			t.Run("control: only the larger token's lease bound", func(t *testing.T) {
				_, l2, lose1 := twoLeases(t)
				ctx := fencedsql.WithLease(context.Background(), l2)
				tx, err := d.db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if _, err := tx.ExecContext(ctx, q[0], 1); err != nil {
					t.Fatal(err)
				}
				lose1()
				if _, err := tx.ExecContext(ctx, q[1], 2); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatalf("Commit: %v", err)
				}
				if b1, b2, _, _ := balances(t, d); b1 != 90 || b2 != 10 {
					t.Fatalf("balances %d, %d: want the unchecked transfer committed", b1, b2)
				}
			})
		})
	}
}
