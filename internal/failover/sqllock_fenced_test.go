package failover

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// sqllock's lease table kept in the fenced database and driven through the fenced
// pool: the wrapper lets the token source be read only, so RaiseFloor and WithMinToken
// are refused before anything is sent. The refusal is a configuration error
// (lockclient.ErrInvalidConfig, the wrapper's ErrUnsupported reachable), not
// ErrUnavailable, which callers retry until their deadline; the floor is unchanged;
// the same backend on a plain connection raises it.
func TestSQLLockFloorThroughFencedPool(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, fenced, b := sqllockOnFencedPool(t, ctx, dsn)
	err := b.RaiseFloor(ctx, 5000)
	if !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) || !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("RaiseFloor through the fenced pool: %v; want ErrInvalidConfig wrapping ErrUnsupported, not ErrUnavailable", err)
	}
	plain, err := sqllock.New(raw, sqllock.WithDialect(sqllock.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := plain.LastToken(ctx); err != nil || n >= 5000 {
		t.Fatalf("LastToken after the refused raise = %d, %v; want below 5000", n, err)
	}
	if err := plain.RaiseFloor(ctx, 5000); err != nil {
		t.Fatal(err)
	}
	if n, err := plain.LastToken(ctx); err != nil || n < 5000 {
		t.Fatalf("LastToken after the raise on a plain connection = %d, %v", n, err)
	}

	// WithMinToken through the fenced pool: the session's Open fails the same way, at once.
	b2, err := sqllock.New(fenced, sqllock.WithDialect(sqllock.Postgres), sqllock.WithMinToken(9000))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = lockclient.New(b2, lockclient.WithTTL(5*time.Second)).TryAcquire(ctx, "k")
	if !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("TryAcquire with WithMinToken through the fenced pool: %v; want ErrInvalidConfig", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("TryAcquire took %v: the refusal was retried", d)
	}
}

// A lease context whose lease is lost makes the fenced pool refuse every statement
// unsent. A lock client called with such a context (acquiring a second lock under the
// first one's context) leaves the lease out of its calls to the service
// (lockclient.CallerOnlyKey), so sqllock on the fenced pool grants the second lock. The
// backend called directly with that context has its statements refused, and reports
// ErrLeaseLost, not ErrUnavailable that callers retry until their deadline (a red-team
// pass).
func TestSQLLockUnderLostLeaseContext(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, fenced, b := sqllockOnFencedPool(t, ctx, dsn)
	locks := lockclient.New(b, lockclient.WithTTL(5*time.Second))
	defer locks.Close(context.Background())

	other := lockclient.New(memlock.New(), lockclient.WithTTL(5*time.Second))
	defer other.Close(context.Background())
	a, err := other.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	_ = a.Release(ctx) // lease a is over: every statement under it is refused unsent
	leaseCtx := fencedsql.WithLease(ctx, a)
	if _, err := fenced.ExecContext(leaseCtx, "SELECT 1"); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("a statement under the released lease: %v; want ErrLeaseLost", err)
	}
	lb, err := locks.TryAcquire(leaseCtx, "b")
	if err != nil {
		t.Fatalf("TryAcquire(b) with a lost lease's context on a sqllock over the fenced pool: %v; want a grant (the caller's lease is not the service's)", err)
	}
	if err := lb.Release(leaseCtx); err != nil {
		t.Fatalf("Release(b): %v", err)
	}

	s, err := b.Open(ctx, "direct", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	_, err = s.TryAcquire(leaseCtx, "c")
	if !errors.Is(err, lockclient.ErrLeaseLost) || errors.Is(err, lockclient.ErrUnavailable) {
		t.Errorf("the backend's TryAcquire(c) called directly with a lost lease's context: %v; want ErrLeaseLost, not ErrUnavailable that callers retry", err)
	}
}

// sqllockOnFencedPool makes a guarded accounts table and the lock table on dsn and
// returns a plain pool, the fenced pool and an sqllock backend on the fenced one (accounts listed).
func sqllockOnFencedPool(t *testing.T, ctx context.Context, dsn string) (raw, fenced *sql.DB, b *sqllock.Backend) {
	t.Helper()
	raw = testdb.Open(t, "pgx", dsn, "CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	if err := sqllock.CreateTable(ctx, raw, sqllock.Postgres, sqllock.DefaultTable); err != nil {
		t.Fatal(err)
	}
	fenced = testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	b, err := sqllock.New(fenced, sqllock.WithDialect(sqllock.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	return raw, fenced, b
}
