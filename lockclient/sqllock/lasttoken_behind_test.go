package sqllock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestLastTokenRefusesCounterBelowOne (red-team rt31b F6): a token source below 1 (a
// MySQL counter row set to -3 by hand or a broken restore; a PostgreSQL sequence
// restarted at -2) holds no token: LastToken — what `lockfloor -show` prints and the
// failover hook raises the guarded database's floor from — answers a *SchemaError
// wrapping ErrInvalidConfig on both dialects, never ErrUnavailable (an outage the hook
// would retry).
func TestLastTokenRefusesCounterBelowOne(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 20*time.Second)
		reset := `ALTER SEQUENCE fencedsql_locks_token_seq MINVALUE -10 RESTART WITH -2`
		if srv.dialect == sqllock.MySQL {
			reset = `UPDATE fencedsql_locks_token SET v = -3 WHERE id = 1`
		}
		if _, err := admin.ExecContext(ctx, reset); err != nil {
			t.Fatal(err)
		}
		b, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
		if err != nil {
			t.Fatal(err)
		}
		last, err := b.LastToken(ctx)
		var se *sqllock.SchemaError
		if err == nil || errors.Is(err, lockclient.ErrUnavailable) || !errors.As(err, &se) || !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Fatalf("LastToken over a token source below 1 = %d, %v (ErrUnavailable %v); want a *SchemaError wrapping ErrInvalidConfig",
				last, err, errors.Is(err, lockclient.ErrUnavailable))
		}
	})
}

// TestLastTokenRefusesSourceBelowLeaseTable (red-team rt31b F1): the token source went
// back below a token the lease table still holds (MySQL `UPDATE … SET v = 0` while
// "held" has token 501; PostgreSQL `ALTER SEQUENCE … RESTART`). A failover hook raises
// the new primary's floor to LastToken+1 so that every lease granted before is refused:
// LastToken must never answer a number below 501. Both dialects refuse the source with
// a *SchemaError, also in a new process (whose backend ran no grant yet) and also on
// every later call; a raise of the floor not above 501 is refused the same way on
// MySQL (its read-back), and one above 501 fixes the source.
func TestLastTokenRefusesSourceBelowLeaseTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 20*time.Second)
		b, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.RaiseFloor(ctx, 500); err != nil {
			t.Fatal(err)
		}
		c := lockclient.New(b, lockclient.WithTTL(30*time.Second))
		defer c.Close(context.Background())
		l, err := c.Acquire(ctx, "held")
		if err != nil {
			t.Fatal(err)
		}
		reset := `ALTER SEQUENCE fencedsql_locks_token_seq RESTART WITH 1`
		if srv.dialect == sqllock.MySQL {
			reset = `UPDATE fencedsql_locks_token SET v = 0 WHERE id = 1`
		}
		if _, err := admin.ExecContext(ctx, reset); err != nil {
			t.Fatal(err)
		}
		// A new process (lockfloor -show at the failover hook).
		b2, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ { // the second call: after the backend's one-time check
			last, err := b2.LastToken(ctx)
			var se *sqllock.SchemaError
			if !errors.As(err, &se) || !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
				t.Fatalf("call %d: LastToken = %d, %v while holder %q has token %d in the lease table; want a *SchemaError "+
					"(a failover hook would raise the floor to %d, below the lease granted before the failover)",
					i+1, last, err, "held", l.Token(), last+1)
			}
		}
		if srv.dialect == sqllock.MySQL {
			if err := b2.RaiseFloor(ctx, 100); !errors.As(err, new(*sqllock.SchemaError)) {
				t.Fatalf("RaiseFloor(100) below token %d = %v; want a *SchemaError (the counter is still below the lease table)", l.Token(), err)
			}
		}
		if err := b2.RaiseFloor(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		if last, err := b2.LastToken(ctx); err != nil || last < 1000 {
			t.Fatalf("after RaiseFloor(1000): LastToken = %d, %v; want at least 1000", last, err)
		}
	})
}
