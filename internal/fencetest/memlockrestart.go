package fencetest

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// MemlockRun is one run of a memlock-served process, started by memlock's restart
// procedure.
type MemlockRun struct {
	Client *lockclient.Client
	// Seed is the service's LastToken when it started: its first lease is above it.
	Seed uint64
	// FloorErr is schema.RaiseTokenFloor's answer to the procedure's floor step: nil
	// where a guard reads a floor, an error where none does (wrapper-only fencing).
	FloorErr error
}

// StartMemlockRun starts a run by memlock's documented restart procedure:
// memlock.New(WithRestartSeed(), WithMinToken(schema.MaxToken(tables...))), then the
// database floor raised to the new service's LastToken+1 before the first lease. The
// client's leases last a minute; it is closed when t ends.
func StartMemlockRun(t testing.TB, ctx context.Context, raw *sql.DB, d dialect.Dialect, tables ...schema.GuardSpec) MemlockRun {
	t.Helper()
	max, err := schema.MaxToken(ctx, raw, d, tables...)
	if err != nil {
		t.Fatal(err)
	}
	svc := memlock.New(memlock.WithRestartSeed(), memlock.WithMinToken(max))
	last, err := svc.LastToken(ctx)
	if err != nil || last < max {
		t.Fatalf("memlock LastToken %d, %v; want at least MaxToken %d", last, err, max)
	}
	floorErr := schema.RaiseTokenFloor(ctx, raw, d, last+1)
	c := lockclient.New(svc, lockclient.WithTTL(time.Minute))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return MemlockRun{Client: c, Seed: last, FloorErr: floorErr}
}

// Acquire takes key on the run's client and fails t if it cannot.
func (r MemlockRun) Acquire(t testing.TB, ctx context.Context, key string) *lockclient.Lease {
	t.Helper()
	l, err := r.Client.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
