package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// waitReplicaRow waits until the replica's query q counts at least one row
// (replication caught up to it).
func waitReplicaRow(ctx context.Context, t *testing.T, driver, dsn, q string, srv *server) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := waitFor(ctx, "replica caught up", srv, func(ctx context.Context) error {
		var n int
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// sqllock keeps its lease table and token source in the guarded, asynchronously
// replicated database (README: "a lease table in your database"). A failover loses the
// grants of the lag window with the writes, and the promoted server's token source
// lags: a floor raised to its LastToken + 1 let a token granted (and superseded) on
// the old primary write, and the service granted that range again (red-team rt42f F1).
// The hook's step (lockfloor -failover: lockclient.AdvanceFloor with the SQL backends'
// default margin, 2^32, then the database floor to the answer + 1) jumps over the lost
// range: the stale token is refused (ErrFenced) for an UPDATE and for the re-insert of
// a row deleted under a lost token, and the service's next grant is above every token
// the old primary granted.
func TestSQLLockInFailedOverDatabaseJumpsLostTokens(t *testing.T) {
	env := needEnv(t)
	t.Run("PostgreSQL", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pair, err := NewPostgres(ctx, env, Async)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pair.Close() })
		sqllockFailoverJump(ctx, t, pair, pgDB, sqllock.Postgres, pair.replica.dsn(), pair.replica.srv)
	})
	t.Run("MariaDB", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pair := asyncMariaDBPair(t, ctx, env)
		sqllockFailoverJump(ctx, t, pair, myDB, sqllock.MySQL, pair.replica.dsn(mariaDBDatabase), pair.replica.srv)
	})
}

func sqllockFailoverJump(ctx context.Context, t *testing.T, pair detacher, d DB, sd sqllock.Dialect, replicaDSN string, replicaSrv *server) {
	sqllockLostTail(ctx, t, pair, d, sd, replicaDSN, replicaSrv, 0, func(np *sql.DB, nb *sqllock.Backend, _ uint64) uint64 {
		// The hook's first step (lockfloor -failover, then -raise-floor answer+1).
		last, err := lockclient.AdvanceFloor(ctx, nb, lockclient.DefaultFailoverMargin)
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.RaiseTokenFloor(ctx, np, d.Dialect, last+1); err != nil {
			t.Fatal(err)
		}
		return last
	})
}

// sqllockLostTail is the schedule of TestSQLLockInFailedOverDatabaseJumpsLostTokens:
// grants (and, with lostRaise above 0, first a raise of sqllock's floor to lostRaise,
// a switch's "lockfloor -raise") on the old primary in the replication lag window, a
// failover, then hook(new primary, sqllock on it, the raise's answer) — the failover
// hook, returning the lock service's answer — and the checks: the tokens granted on
// the old primary are refused, the service's next grant is above them and writes.
func sqllockLostTail(ctx context.Context, t *testing.T, pair detacher, d DB, sd sqllock.Dialect, replicaDSN string, replicaSrv *server,
	lostRaise uint64, hook func(np *sql.DB, nb *sqllock.Backend, answer uint64) uint64) {
	if _, err := Install(ctx, pair.DSN(), d); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open(d.PlainDriver, pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := sqllock.CreateTable(ctx, raw, sd, ""); err != nil {
		t.Fatal(err)
	}
	b, err := sqllock.New(raw, sqllock.WithDialect(sd))
	if err != nil {
		t.Fatal(err)
	}
	locks := lockclient.New(b, lockclient.WithTTL(10*time.Second))
	defer locks.Close(context.Background())
	fenced, err := sql.Open(d.FencedDriver, FencedDSN(pair.DSN()))
	if err != nil {
		t.Fatal(err)
	}
	defer fenced.Close()
	l0, err := locks.Acquire(ctx, "jump-setup")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 2} {
		if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, l0.Token()), d.Upsert, id, "zero"); err != nil {
			t.Fatal(err)
		}
	}
	_ = l0.Release(ctx)
	waitReplicaRow(ctx, t, d.PlainDriver, replicaDSN, `SELECT count(*) FROM `+Table+` WHERE id = 2`, replicaSrv)
	if err := pair.Detach(ctx); err != nil { // replication lags from here on
		t.Fatal(err)
	}
	// The switch's "lockfloor -raise" on sqllock, its answer (-show) recorded outside
	// the database, inside the lag window.
	var answer uint64
	if lostRaise > 0 {
		if err := b.RaiseFloor(ctx, lostRaise); err != nil {
			t.Fatal(err)
		}
		if answer, err = b.LastToken(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Grants of other keys on the old primary (beyond PostgreSQL's 32 pre-logged
	// sequence values); A gets the key and its lease ends; B writes under the next.
	for i := 0; i < 40; i++ {
		l, err := locks.Acquire(ctx, fmt.Sprintf("jump-other-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(ctx)
	}
	la, err := locks.Acquire(ctx, "jump-row")
	if err != nil {
		t.Fatal(err)
	}
	tA := la.Token()
	_ = la.Release(ctx)
	lb, err := locks.Acquire(ctx, "jump-row")
	if err != nil {
		t.Fatal(err)
	}
	tB := lb.Token()
	for _, q := range []string{`UPDATE ` + Table + ` SET holder = 'B' WHERE id = 1`, `DELETE FROM ` + Table + ` WHERE id = 2`} {
		if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, tB), q); err != nil {
			t.Fatal(err)
		}
	}
	fenced.Close()
	locks.Close(ctx)
	raw.Close()
	if err := pair.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	np, err := sql.Open(d.PlainDriver, pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer np.Close()
	nb, err := sqllock.New(np, sqllock.WithDialect(sd))
	if err != nil {
		t.Fatal(err)
	}
	lagging, err := nb.LastToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := hook(np, nb, answer)
	t.Logf("old primary granted tA=%d, tB=%d; the promoted token source's LastToken %d; after the jump %d", tA, tB, lagging, last)
	after, err := sql.Open(d.FencedDriver, FencedDSN(pair.DSN()))
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	stale := fencedsql.WithToken(ctx, tA)
	if _, err := after.ExecContext(stale, `UPDATE `+Table+` SET holder = 'A' WHERE id = 1`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("token %d (granted on the old primary) UPDATE on the new primary after the hook: %v; want ErrFenced", tA, err)
	}
	if _, err := after.ExecContext(stale, d.Upsert, 2, "A"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("token %d re-INSERT of the row deleted under %d, after the hook: %v; want ErrFenced", tA, tB, err)
	}
	nlocks := lockclient.New(nb, lockclient.WithTTL(10*time.Second))
	defer nlocks.Close(context.Background())
	ln, err := nlocks.Acquire(ctx, "jump-new")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Release(ctx)
	if ln.Token() <= tB || ln.Token() <= last {
		t.Errorf("the service's next grant on the new primary is token %d: not above tB=%d and the hook's answer %d", ln.Token(), tB, last)
	}
	if _, err := after.ExecContext(fencedsql.WithToken(ctx, ln.Token()), `UPDATE `+Table+` SET holder = 'N' WHERE id = 1`); err != nil {
		t.Errorf("the new holder's write (token %d): %v", ln.Token(), err)
	}
}
