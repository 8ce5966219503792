package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// switchLockService is the documented procedure (README, "Switching or rebuilding the
// lock service") for moving an application from one lock service to another: retire
// the old service (lockfloor -retire), which refuses every later grant and answers the
// last token it issued — a service that cannot be retired (sqllock: ErrNoRetire) is
// read with lockfloor -show instead, and then every process configured for it must
// have been stopped; raise the new service's floor above both the highest token the
// database has accepted and the old service's last token; then raise the database's
// floor to the new service's last token + 1, so that a lease the old service granted
// can no longer write.
func switchLockService(ctx context.Context, raw *sql.DB, from, to *lockclient.Client) error {
	_, err := switchLockServiceAnswer(ctx, raw, from, to)
	return err
}

// switchLockServiceAnswer is switchLockService, returning the switch's answer: the new
// service's last token after its raise (lockfloor -show), which the README has the
// operator record outside the database for the restore and failover runbooks
// (FENCEDSQL_FLOOR_AT_LEAST; red-team rt59c F2).
func switchLockServiceAnswer(ctx context.Context, raw *sql.DB, from, to *lockclient.Client) (uint64, error) {
	dbMax, err := schema.MaxToken(ctx, raw, postgres.Dialect) // fencedsql-schema -max-token
	if err != nil {
		return 0, err
	}
	old, err := from.Retire(ctx) // lockfloor -retire (old service)
	if errors.Is(err, lockclient.ErrNoRetire) {
		old, err = from.LastToken(ctx) // lockfloor -show (old service)
	}
	if err != nil {
		return 0, err
	}
	if err := to.RaiseFloor(ctx, max(dbMax, old)); err != nil { // lockfloor -raise N (new service)
		return 0, err
	}
	next, err := to.LastToken(ctx) // lockfloor -show (new service): the answer to record
	if err != nil {
		return 0, err
	}
	return next, schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, next+1) // fencedsql-schema -raise-floor
}

// transfers runs n increments of three accounts, each under its account's lock from
// locks, and returns how many were written and how many fenced.
func transfers(ctx context.Context, t *testing.T, locks *lockclient.Client, db *sql.DB, n int) (written, fenced int) {
	t.Helper()
	for i := range n {
		id := i % 3
		lease, err := locks.Acquire(ctx, fmt.Sprintf("account:%d", id))
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		_, err = db.ExecContext(fencedsql.WithLease(ctx, lease), "UPDATE accounts SET balance = balance + 1 WHERE id = $1", id)
		switch {
		case err == nil:
			written++
		case errors.Is(err, fencedsql.ErrFenced):
			fenced++
		default:
			t.Fatalf("write: %v", err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	return written, fenced
}

// TestSwitchLockService moves a running application from sqllock to etcd and back
// (G14: tokens never go back). sqllock has issued tokens far above etcd's revisions, as
// a long-lived service would have. Without the procedure every etcd holder is fenced —
// and with WithTokenSource the driver says why, naming the procedure; with it, no
// write is fenced or lost in either direction, and a lease the old service granted
// before the switch is refused by the database's floor.
func TestSwitchLockService(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, s := range []string{
		"CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL)",
		"INSERT INTO accounts (id, balance) VALUES (0, 0), (1, 0), (2, 0)",
	} {
		if _, err := raw.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	spec := schema.GuardSpec{Table: "accounts"}
	if err := schema.RegisterTables(ctx, raw, postgres.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	fencetest.Guard(t, ctx, raw, postgres.Dialect, spec)
	if err := sqllock.CreateTable(ctx, raw, sqllock.Postgres, sqllock.DefaultTable); err != nil {
		t.Fatal(err)
	}
	sqlBackend, err := sqllock.New(raw, sqllock.WithDialect(sqllock.Postgres), sqllock.WithMinToken(1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	sqlLocks := lockclient.New(sqlBackend, lockclient.WithTTL(10*time.Second))
	defer sqlLocks.Close(context.Background())
	cluster := etcdtest.StartSingle(t)
	etcdLocks := lockclient.New(etcdlock.New(cluster.Client(t)), lockclient.WithTTL(10*time.Second))
	defer etcdLocks.Close(context.Background())

	open := func(src fencedsql.TokenSource) *sql.DB {
		var db *sql.DB
		if src == nil {
			if db, err = sql.Open(postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts")); err != nil {
				t.Fatal(err)
			}
		} else {
			db = fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
				fencedsql.Guard("accounts"), fencedsql.WithTokenSource(src))
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	app := open(nil)
	total := 0

	// On sqllock.
	w, f := transfers(ctx, t, sqlLocks, app, 30)
	if f != 0 {
		t.Fatalf("sqllock: %d writes fenced", f)
	}
	total += w

	// Moved to etcd without the procedure: its tokens (revisions) are below the rows'.
	lease, err := etcdLocks.Acquire(ctx, "account:0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.ExecContext(fencedsql.WithLease(ctx, lease), "UPDATE accounts SET balance = balance + 1 WHERE id = 0")
	if !errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrTokenRegression) {
		t.Fatalf("etcd before the procedure, no token source: err = %v, want a plain ErrFenced", err)
	}
	detecting := open(etcdLocks)
	_, err = detecting.ExecContext(fencedsql.WithLease(ctx, lease), "UPDATE accounts SET balance = balance + 1 WHERE id = 0")
	var re *fencedsql.TokenRegressionError
	if !errors.Is(err, fencedsql.ErrTokenRegression) || !errors.Is(err, fencedsql.ErrFenced) || !errors.As(err, &re) || re.DatabaseToken <= re.ServiceToken {
		t.Fatalf("etcd before the procedure, with WithTokenSource: err = %v, want ErrTokenRegression", err)
	}
	t.Logf("detected: %v", err)
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A holder of the old service, granted before the switch and still within its TTL.
	stale, err := sqlLocks.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := switchLockService(ctx, raw, sqlLocks, etcdLocks); err != nil {
		t.Fatal(err)
	}
	// The old service's holder, right after the switch: its token is above every row's
	// (it was the last one granted), yet below the floor.
	for _, q := range []string{"UPDATE accounts SET balance = balance + 1000 WHERE id = 1", "INSERT INTO accounts (id, balance) VALUES (3, 1000)"} {
		_, err = app.ExecContext(fencedsql.WithLease(ctx, stale), q)
		if !errors.Is(err, fencedsql.ErrBelowFloor) {
			t.Fatalf("the old service's lease after the switch, %q: err = %v, want ErrBelowFloor", q, err)
		}
	}
	_ = stale.Release(ctx)
	w, f = transfers(ctx, t, etcdLocks, detecting, 30)
	if f != 0 {
		t.Fatalf("etcd after the procedure: %d writes fenced", f)
	}
	total += w

	// The retired sqllock grants nothing (lockclient.Retirer): a straggler still
	// configured for it gets no lease.
	if l, err := sqlLocks.Acquire(ctx, "account:2"); !errors.Is(err, lockclient.ErrRetired) {
		if l != nil {
			t.Fatalf("the retired sqllock granted token %d", l.Token())
		}
		t.Fatalf("Acquire on the retired sqllock: %v, want ErrRetired", err)
	}

	// And back to sqllock: a retired service is not brought back, so the switch back
	// goes to a fresh lease table, by the same procedure.
	const backTable = "fencedsql_locks_back"
	if err := sqllock.CreateTable(ctx, raw, sqllock.Postgres, backTable); err != nil {
		t.Fatal(err)
	}
	backBackend, err := sqllock.New(raw, sqllock.WithDialect(sqllock.Postgres), sqllock.WithTable(backTable))
	if err != nil {
		t.Fatal(err)
	}
	sqlBack := lockclient.New(backBackend, lockclient.WithTTL(10*time.Second))
	defer sqlBack.Close(context.Background())
	if err := switchLockService(ctx, raw, etcdLocks, sqlBack); err != nil {
		t.Fatal(err)
	}
	w, f = transfers(ctx, t, sqlBack, app, 30)
	if f != 0 {
		t.Fatalf("sqllock after switching back: %d writes fenced", f)
	}
	total += w

	var sum int
	if err := raw.QueryRowContext(ctx, "SELECT SUM(balance) FROM accounts").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != total || total != 90 {
		t.Fatalf("balances sum to %d, %d writes acknowledged (want 90): a write was lost or a refused one landed", sum, total)
	}
}
