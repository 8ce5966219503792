package sqllock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestNarrowTokenColumnIsSchemaError (red-team rt31b F2): the lease table's token column
// is narrower than BIGINT (`integer` / `INT`: an older hand-written schema, a restore
// through a tool that maps types). After a switch from a lock service with larger
// tokens (RaiseFloor to a Redis clock-seeded 1.7·10^15) every grant would fail storing
// the token. The token-source check (RaiseFloor, CheckTable, the first grant) refuses
// the column with a *SchemaError (ErrInvalidConfig), never an outage that Acquire
// retries until its deadline.
func TestNarrowTokenColumnIsSchemaError(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 20*time.Second)
		alter := `ALTER TABLE fencedsql_locks ALTER COLUMN token TYPE integer`
		if srv.dialect == sqllock.MySQL {
			alter = `ALTER TABLE fencedsql_locks MODIFY token INT NOT NULL`
		}
		if _, err := admin.ExecContext(ctx, alter); err != nil {
			t.Fatal(err)
		}
		b, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(srv.dialect))
		if err != nil {
			t.Fatal(err)
		}
		const floor = 1_733_000_000_000_000 // a Redis clock-seeded counter
		raiseErr := b.RaiseFloor(ctx, floor)
		checkErr := b.CheckTable(ctx)
		for what, err := range map[string]error{"RaiseFloor": raiseErr, "CheckTable": checkErr} {
			if !errors.As(err, new(*sqllock.SchemaError)) || !strings.Contains(err.Error(), "bigint") && !strings.Contains(err.Error(), "BIGINT") {
				t.Errorf("%s over an integer token column = %v; want a *SchemaError naming the fix (BIGINT)", what, err)
			}
		}
		c := lockclient.New(b, lockclient.WithTTL(10*time.Second))
		defer c.Close(context.Background())
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		start := time.Now()
		l, err := c.Acquire(actx, "k")
		switch {
		case err == nil:
			var stored int64
			q := `SELECT token FROM fencedsql_locks WHERE lock_key = $1`
			if srv.dialect == sqllock.MySQL {
				q = `SELECT token FROM fencedsql_locks WHERE lock_key = ?`
			}
			admin.QueryRowContext(ctx, q, "k").Scan(&stored)
			if l.Token() <= floor || uint64(stored) != l.Token() {
				t.Fatalf("granted token %d (lease row holds %d) after RaiseFloor(%d) (raise err %v, CheckTable err %v)", l.Token(), stored, uint64(floor), raiseErr, checkErr)
			}
		case errors.Is(err, lockclient.ErrInvalidConfig) && !errors.Is(err, lockclient.ErrUnavailable):
			// typed refusal: right
		default:
			t.Fatalf("a token column narrower than the token source: RaiseFloor(%d) = %v, CheckTable = %v, then Acquire = %v after %v "+
				"(ErrUnavailable %v); want a typed configuration error (ErrInvalidConfig), not an outage retried until the deadline",
				uint64(floor), raiseErr, checkErr, err, time.Since(start).Round(time.Millisecond), errors.Is(err, lockclient.ErrUnavailable))
		}
	})
}
