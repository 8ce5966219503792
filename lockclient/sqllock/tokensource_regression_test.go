package sqllock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestTokenSourceResetBelowLeaseTableRefused (red-team rt28b F1): the token source is reset while the
// lease table still remembers higher tokens — PostgreSQL `ALTER SEQUENCE
// <table>_token_seq RESTART` (or a setval lower, a sequence restored from an older dump
// than the table), MySQL/MariaDB `UPDATE <table>_token SET v = 0` — and then a backend
// (a new process: its first grant runs the token-source check) grants. The lease table
// holds a live holder's token (501, on key "held") and an expired, not released, grant
// of key "k" (502). The next grant of "k" takes over the expired row with a token drawn
// from the reset source (1..3): the service grants a token below one it granted before
// for the same lock, and below a live holder's of another key, silently.
//
// Right behaviour (G14, lockclient.Session.TryAcquire: "strictly greater than every
// token the service issued before"): the reset is detectable from the lease table
// itself, as CreateTable already does for a dropped sequence (it starts the new one at
// max(token)). The first-grant check (checkTokenSeq / CheckTable) should compare the
// source's last value with max(token) of the lease table and refuse with a
// *SchemaError (Unsafe: "raise the floor above …"), or the grant statement should never
// replace a row's token by a smaller one (ON CONFLICT … WHERE excluded.token > l.token,
// failing typed otherwise).
func TestTokenSourceResetBelowLeaseTableRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 30*time.Second)
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.RaiseFloor(ctx, 500); err != nil {
			t.Fatal(err)
		}
		held := grantOne(t, openSession(t, b), "held")
		// "k": granted with a short TTL, left to expire, not released.
		es, err := b.Open(ctx, "expired", 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		g, err := es.TryAcquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		prev := g.Token
		time.Sleep(80 * time.Millisecond)

		reset := `ALTER SEQUENCE fencedsql_locks_token_seq RESTART`
		if srv.dialect == sqllock.MySQL {
			reset = `UPDATE fencedsql_locks_token SET v = 0 WHERE id = 1`
		}
		if _, err := admin.ExecContext(ctx, reset); err != nil {
			t.Fatal(err)
		}

		b2, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		s2, err := b2.Open(ctx, "next", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close(ctx)
		g2, err := s2.TryAcquire(ctx, "k")
		if err != nil {
			var se *sqllock.SchemaError
			if errors.As(err, &se) || errors.Is(err, lockclient.ErrInvalidConfig) {
				// Typed refusal; its fix, a raise of the floor, must be accepted and work.
				if err := b2.RaiseFloor(ctx, 1000); err != nil {
					t.Fatalf("RaiseFloor(1000), the fix the refusal names: %v", err)
				}
				g3, err := s2.TryAcquire(ctx, "k")
				if err != nil {
					t.Fatalf("TryAcquire after the raise: %v", err)
				}
				if g3.Token <= 1000 {
					t.Fatalf("token %d after RaiseFloor(1000)", g3.Token)
				}
				return
			}
			t.Fatalf("TryAcquire after the reset: %v (untyped)", err)
		}
		if g2.Token <= prev || g2.Token <= held {
			t.Fatalf("after the token source was reset, key %q was granted token %d: at or below its previous grant's token %d "+
				"(still in the lease table) and the live holder's %d of key %q; want a token above both or a *SchemaError",
				"k", g2.Token, prev, held, "held")
		}
	})
}

// TestUnstorableKeyIsConfigError (red-team rt28b F7): a lock name the lease table cannot store —
// longer than MaxKeyLen bytes, or (PostgreSQL) with a NUL byte or invalid UTF-8 — is
// refused by the session before any statement with a plain, untyped error. The Client
// classifies every untyped error as ErrUnavailable, so Acquire logs "lock service
// unreachable, retrying" and retries with backoff until the caller's deadline, and the
// caller finally sees context.DeadlineExceeded wrapping ErrUnavailable: an outage, not a
// wrong lock name (over-refusal with a misleading error, and a stalled caller).
//
// Right behaviour: the refusal wraps lockclient.ErrInvalidConfig (or another typed,
// non-retried sentinel), so Acquire ends at once with it, as it does for a missing
// lease table.
func TestUnstorableKeyIsConfigError(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, _ := srv.fresh(t, "")
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
		defer c.Close(ctxT(t, 5*time.Second))
		keys := []string{strings.Repeat("x", sqllock.MaxKeyLen+1)}
		if srv.dialect == sqllock.Postgres {
			keys = append(keys, "a\x00b", "\xff")
		}
		for _, k := range keys {
			ctx := ctxT(t, 1500*time.Millisecond)
			start := time.Now()
			l, err := c.Acquire(ctx, k)
			if err == nil {
				l.Release(ctx)
				t.Fatalf("Acquire of an unstorable key (%d bytes) succeeded", len(k))
			}
			if !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
				t.Errorf("Acquire of an unstorable key (%d bytes) = %v after %v; want an error wrapping ErrInvalidConfig at once, not ErrUnavailable retried until the deadline",
					len(k), err, time.Since(start).Round(time.Millisecond))
			}
		}
	})
}

// TestHighFloorOneAnswerForEveryProcess (red-team rt28b F5): RaiseFloor accepted any
// floor up to 2^63−2, and the backend that raised it went on granting, but on PostgreSQL
// every other Backend's first grant refused a sequence with fewer than 1,000,000 values
// left (a *SchemaError whose fix changed nothing). Now the raise and the check share one
// limit: a floor that leaves fewer values is refused at the raise (ErrInvalidConfig),
// on both dialects, and the highest accepted floor lets every new process grant.
func TestHighFloorOneAnswerForEveryProcess(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, _ := srv.fresh(t, "")
		ctx := ctxT(t, 20*time.Second)
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.RaiseFloor(ctx, 1<<63-1-1000); !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Fatalf("RaiseFloor(2^63-1001) = %v; want ErrInvalidConfig (too few tokens left for the token-source check)", err)
		}
		if _, err := sqllock.New(srv.open(t, dsn), sqllock.WithMinToken(1<<63-1-1000)); !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Fatalf("WithMinToken(2^63-1001) = %v; want ErrInvalidConfig", err)
		}
		const floor = 1<<63 - 1 - 1_000_000 // the highest floor accepted
		if err := b.RaiseFloor(ctx, floor); err != nil {
			t.Fatalf("RaiseFloor(2^63-1-10^6): %v", err)
		}
		if tok := grantOne(t, openSession(t, b), "a"); tok <= floor {
			t.Fatalf("token %d at or below the floor", tok)
		}
		b2, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		s2 := openSession(t, b2)
		g, err := s2.TryAcquire(ctx, "b")
		if err != nil {
			t.Fatalf("a second backend (a new process) cannot grant after the highest floor the first accepted: %v", err)
		}
		if g.Token <= floor {
			t.Fatalf("token %d at or below the floor", g.Token)
		}
	})
}

// TestNonPositiveTokenSourceRefused (red-team rt28b F6): a PostgreSQL token sequence reset to a
// value at or below 0 (`ALTER SEQUENCE … MINVALUE -10 RESTART WITH -2`: a DBA's reset,
// a restore with other sequence options) passes the token-source check (it looks at
// CACHE, CYCLE, INCREMENT, MAXVALUE and persistence, not at MINVALUE or the last value).
// The grant routine then inserts the lease row with token -2 (or 0) and returns it, and
// the session reads the negative value as its own "request marked abandoned" sentinel
// (ErrUnavailable) and 0 as "held" (ErrHeld): the key is held in the table by a grant
// nobody got, the caller is told the service is unreachable / the lock is held.
//
// Right behaviour: the token-source check refuses a sequence whose next values are not
// positive (*SchemaError, Unsafe: "raise the floor" / "ALTER SEQUENCE … MINVALUE 1"),
// or a grant that draws a token < 1 fails with a *SchemaError without leaving a row.
func TestNonPositiveTokenSourceRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) { nonPositiveTokenSource(t, srv) })
}

func nonPositiveTokenSource(t *testing.T, srv server) {
	dsn, admin := srv.fresh(t, "")
	ctx := ctxT(t, 20*time.Second)
	reset := `ALTER SEQUENCE fencedsql_locks_token_seq MINVALUE -10 RESTART WITH -2`
	if srv.dialect == sqllock.MySQL {
		reset = `UPDATE fencedsql_locks_token SET v = -3 WHERE id = 1`
	}
	if _, err := admin.ExecContext(ctx, reset); err != nil {
		t.Fatal(err)
	}
	b, err := sqllock.New(srv.open(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(t, b)
	var errs []string
	for _, k := range []string{"a", "b", "c"} { // tokens -2, -1, 0
		g, err := s.TryAcquire(ctx, k)
		var se *sqllock.SchemaError
		switch {
		case err == nil:
			errs = append(errs, fmt.Sprintf("%s: granted token %d", k, g.Token))
		case errors.As(err, &se):
			continue // typed refusal
		default:
			var rows int
			q := `SELECT count(*) FROM fencedsql_locks WHERE lock_key = $1`
			if srv.dialect == sqllock.MySQL {
				q = `SELECT count(*) FROM fencedsql_locks WHERE lock_key = ?`
			}
			admin.QueryRowContext(ctx, q, k).Scan(&rows)
			errs = append(errs, fmt.Sprintf("%s: %v (ErrHeld %v, ErrUnavailable %v; lease rows for the key: %d)",
				k, err, errors.Is(err, lockclient.ErrHeld), errors.Is(err, lockclient.ErrUnavailable), rows))
		}
	}
	if len(errs) > 0 {
		t.Fatalf("a token sequence at or below 0 is not refused as unsafe:\n%s", strings.Join(errs, "\n"))
	}
}
