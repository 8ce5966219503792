package sqllock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// grantOne grants a new key through s and returns its token.
func grantOne(t *testing.T, s lockclient.Session, key string) uint64 {
	t.Helper()
	g, err := s.TryAcquire(ctxT(t, 10*time.Second), key)
	if err != nil {
		t.Fatalf("TryAcquire(%q): %v", key, err)
	}
	return g.Token
}

func openSession(t *testing.T, b *sqllock.Backend) lockclient.Session {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	s, err := b.Open(ctx, "floor", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func lastToken(t *testing.T, b *sqllock.Backend) uint64 {
	t.Helper()
	n, err := b.LastToken(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRaiseFloor(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, _ := srv.fresh(t, "")
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t, 30*time.Second)
		s := openSession(t, b)
		if n := lastToken(t, b); n != 0 {
			t.Fatalf("LastToken of a new table = %d, want 0", n)
		}
		t1 := grantOne(t, s, "a")
		if n := lastToken(t, b); n != t1 {
			t.Fatalf("LastToken = %d after granting %d", n, t1)
		}
		if err := b.RaiseFloor(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		if n := lastToken(t, b); n != 1000 {
			t.Fatalf("LastToken after RaiseFloor(1000) = %d", n)
		}
		t2 := grantOne(t, s, "b")
		if t2 <= 1000 {
			t.Fatalf("token %d after RaiseFloor(1000)", t2)
		}
		// Lower or equal floors change nothing: the next token follows t2.
		for _, f := range []uint64{0, 10, 1000, t2} {
			if err := b.RaiseFloor(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		if n := lastToken(t, b); n != t2 {
			t.Fatalf("LastToken = %d after lower floors, want %d", n, t2)
		}
		if t3 := grantOne(t, s, "c"); t3 != t2+1 {
			t.Fatalf("token %d after lower floors, want %d", t3, t2+1)
		}
		if err := b.RaiseFloor(ctx, 1<<63); !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Fatalf("RaiseFloor(2^63) = %v, want ErrInvalidConfig", err)
		}
		// Through the Client.
		c := lockclient.New(b)
		defer c.Close(ctx)
		if err := c.RaiseFloor(ctx, 5000); err != nil {
			t.Fatal(err)
		}
		if n, err := c.LastToken(ctx); err != nil || n != 5000 {
			t.Fatalf("Client.LastToken = %d, %v, want 5000", n, err)
		}
	})
}

// TestRaiseFloorConcurrentWithGrants: grants on several connections and raises of the
// floor at the same time. Whatever completed before another began is ordered: a grant
// after a grant has the larger token, a grant after a RaiseFloor(f) a token above f, and
// LastToken lies between the grants before and after it.
func TestRaiseFloorConcurrentWithGrants(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, _ := srv.fresh(t, "")
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t, 60*time.Second)
		type event struct {
			start, end time.Time
			kind       string // "grant", "raise", "last"
			v          uint64
		}
		var mu sync.Mutex
		var events []event
		record := func(e event) { mu.Lock(); events = append(events, e); mu.Unlock() }
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			s := openSession(t, b)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 40; i++ {
					start := time.Now()
					g, err := s.TryAcquire(ctx, fmt.Sprintf("w%d-%d", w, i))
					if err != nil {
						t.Error(err)
						return
					}
					record(event{start, time.Now(), "grant", g.Token})
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 20; i++ {
				start := time.Now()
				f := uint64(i) * 1000
				if i%2 == 0 {
					f = uint64(i) * 10 // often below the tokens: changes nothing
				}
				if err := b.RaiseFloor(ctx, f); err != nil {
					t.Error(err)
					return
				}
				record(event{start, time.Now(), "raise", f})
				start = time.Now()
				n, err := b.LastToken(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				record(event{start, time.Now(), "last", n})
			}
		}()
		wg.Wait()
		seen := map[uint64]bool{}
		grants := 0
		for _, a := range events {
			if a.kind == "grant" {
				grants++
				if seen[a.v] {
					t.Errorf("token %d granted twice", a.v)
				}
				seen[a.v] = true
			}
			for _, g := range events {
				if g.kind != "grant" || !a.end.Before(g.start) {
					continue
				}
				switch a.kind {
				case "grant":
					if g.v <= a.v {
						t.Errorf("grant %d after grant %d", g.v, a.v)
					}
				case "raise", "last":
					if g.v <= a.v {
						t.Errorf("grant %d after %s %d", g.v, a.kind, a.v)
					}
				}
			}
			if a.kind == "last" {
				for _, g := range events {
					if g.kind == "grant" && g.end.Before(a.start) && g.v > a.v {
						t.Errorf("LastToken %d below token %d granted before", a.v, g.v)
					}
				}
			}
		}
		if grants != 160 {
			t.Fatalf("%d grants, want 160", grants)
		}
	})
}

// TestMinTokenAfterRecreate: a lease table dropped and created again starts its tokens
// at 1; a backend WithMinToken(the old LastToken) resumes above the old tokens, and
// WithMinToken never lowers them.
func TestMinTokenAfterRecreate(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 30*time.Second)
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.RaiseFloor(ctx, 700); err != nil {
			t.Fatal(err)
		}
		s := openSession(t, b)
		var old uint64
		for i := 0; i < 3; i++ {
			old = grantOne(t, s, fmt.Sprint("k", i))
		}
		last := lastToken(t, b)
		if last != old {
			t.Fatalf("LastToken %d, last grant %d", last, old)
		}
		drop, err := sqllock.DropDDL(srv.dialect, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range drop {
			if _, err := admin.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := sqllock.CreateTable(ctx, admin, srv.dialect, ""); err != nil {
			t.Fatal(err)
		}
		if n := lastToken(t, b); n != 0 {
			t.Fatalf("LastToken of the recreated table = %d: the check below would not show anything", n)
		}
		b2, err := sqllock.New(srv.open(t, dsn), sqllock.WithMinToken(last))
		if err != nil {
			t.Fatal(err)
		}
		s2 := openSession(t, b2)
		t2 := grantOne(t, s2, "k0")
		if t2 <= old {
			t.Fatalf("token %d after recreating with WithMinToken(%d), old tokens up to %d", t2, last, old)
		}
		// Idempotent: another backend with the same (now lower) minimum lowers nothing.
		b3, err := sqllock.New(srv.open(t, dsn), sqllock.WithMinToken(last))
		if err != nil {
			t.Fatal(err)
		}
		if t3 := grantOne(t, openSession(t, b3), "k1"); t3 != t2+1 {
			t.Fatalf("token %d after a second WithMinToken(%d), want %d", t3, last, t2+1)
		}
		if _, err := sqllock.New(srv.open(t, dsn), sqllock.WithMinToken(1<<63)); !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Fatalf("WithMinToken(2^63): %v, want ErrInvalidConfig", err)
		}
	})
}

// On PostgreSQL a raise through another spelling of the same table ("public.fencedsql_locks"
// for the application's "fencedsql_locks", as lockfloor -table or a schema-qualified
// WithTable gives) is serialised with the grants: the table-wide advisory lock derives
// from the table the name resolves to, not from the spelling. A grant that has drawn its
// token and not yet committed (a slow BEFORE trigger stands for commit latency) is waited
// for: RaiseFloor returns only after it committed, so every token issued after the raise
// returns is above its minimum (lockclient.FloorRaiser).
func TestRaiseFloorSerialisedAcrossTableSpellings(t *testing.T) {
	srv := servers[0]
	if srv.dialect != sqllock.Postgres {
		t.Fatal("servers[0] is not PostgreSQL")
	}
	dsn, admin := srv.fresh(t, "") // CreateTable(…, "") = "fencedsql_locks"
	ctx := ctxT(t, 30*time.Second)
	for _, q := range []string{
		`CREATE FUNCTION slow_grant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.owner = 'slow' THEN PERFORM pg_sleep(1.5); END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER slow_grant BEFORE INSERT OR UPDATE ON fencedsql_locks FOR EACH ROW EXECUTE FUNCTION slow_grant()`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	app, err := sqllock.New(srv.open(t, dsn)) // the application: default name
	if err != nil {
		t.Fatal(err)
	}
	ops, err := sqllock.New(srv.open(t, dsn), sqllock.WithTable("public.fencedsql_locks")) // the operator's raise
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ops.LastToken(ctx); err != nil { // the same table: it answers
		t.Fatal(err)
	}
	s, err := app.Open(ctx, "slow", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	type res struct {
		g   lockclient.Grant
		err error
	}
	done := make(chan res, 1)
	go func() {
		g, err := s.TryAcquire(ctx, "a")
		done <- res{g, err}
	}()
	time.Sleep(400 * time.Millisecond) // the grant has drawn its token and sits in the trigger
	const min = 1000
	if err := ops.RaiseFloor(ctx, min); err != nil {
		t.Fatal(err)
	}
	var committed int
	if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM fencedsql_locks WHERE lock_key = 'a'`).Scan(&committed); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if committed == 0 {
		t.Fatalf("RaiseFloor(%d) through \"public.fencedsql_locks\" returned while a grant of the same table was uncommitted; "+
			"that grant then took effect with token %d", min, r.g.Token)
	}
	if r.g.Token > min {
		t.Fatalf("the grant drawn before the raise got token %d, above the floor %d: the raise went first", r.g.Token, min)
	}
	if g := grantOne(t, s, "b"); g <= min {
		t.Fatalf("token %d after RaiseFloor(%d)", g, min)
	}
}

// The lockclient floor suite (RaiseFloor, LastToken, Retire) on each server, each check
// on a fresh lease table.
func TestFloorConformance(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			locktest.RunFloor(t, locktest.Harness{TTL: locktest.NetworkTTL, New: func(t *testing.T) locktest.Namespace {
				return newNamespace(t, srv)
			}})
		})
	}
}
