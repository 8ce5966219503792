package sqllock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// A PostgreSQL token sequence that does not hand out values in call order across
// connections — CACHE above 1 (each connection draws from its own block), CYCLE (wraps
// to MINVALUE), a negative INCREMENT — would let a later grant of a key get a smaller
// token than the earlier holder's: the stale holder would win every fenced write.
// CREATE SEQUENCE IF NOT EXISTS keeps such a sequence, so CheckTable, the first grant
// of a Backend and the floor operations refuse it with a *SchemaError.
func TestTokenSequenceOutOfOrderRefused(t *testing.T) {
	srv := servers[0]
	if srv.name != "postgres" {
		t.Fatal("servers[0] is not postgres")
	}
	for _, tc := range []struct{ name, alter string }{
		{"cache", `ALTER SEQUENCE fencedsql_locks_token_seq CACHE 20`},
		{"cycle", `ALTER SEQUENCE fencedsql_locks_token_seq CYCLE`},
		{"negative-increment", `ALTER SEQUENCE fencedsql_locks_token_seq INCREMENT BY -1 MINVALUE -100`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, admin := srv.fresh(t, "")
			ctx := ctxT(t, 30*time.Second)
			if _, err := admin.ExecContext(ctx, tc.alter); err != nil {
				t.Fatal(err)
			}
			b, err := sqllock.New(srv.open(t, dsn))
			if err != nil {
				t.Fatal(err)
			}
			wantSchema := func(what string, err error) {
				t.Helper()
				var se *sqllock.SchemaError
				if !errors.As(err, &se) || !errors.Is(err, sqllock.ErrSchema) || !errors.Is(err, lockclient.ErrInvalidConfig) ||
					errors.Is(err, lockclient.ErrUnavailable) {
					t.Fatalf("%s with an out-of-order token sequence: %v, want a *SchemaError (ErrSchema, ErrInvalidConfig)", what, err)
				}
			}
			wantSchema("CheckTable", b.CheckTable(ctx))
			s := openSession(t, b)
			_, err = s.TryAcquire(ctx, "k")
			wantSchema("TryAcquire", err)
			_, err = b.LastToken(ctx)
			wantSchema("LastToken", err)
			wantSchema("RaiseFloor", b.RaiseFloor(ctx, 10))
			c := lockclient.New(b)
			t.Cleanup(func() { c.Close(ctx) })
			_, err = c.Acquire(ctx, "k2")
			wantSchema("Acquire", err)
		})
	}
	t.Run("default", func(t *testing.T) {
		dsn, _ := srv.fresh(t, "")
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.CheckTable(ctxT(t, 10*time.Second)); err != nil {
			t.Fatalf("CheckTable of a table CreateTable made: %v", err)
		}
		grantOne(t, openSession(t, b), "k")
	})
}
