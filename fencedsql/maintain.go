package fencedsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// Maintain is the administrative path to guarded rows: an admin UPDATE, a migration's
// backfill, a repair. With the database-side guards installed, a plain connection
// cannot change guarded rows (ErrGuard: the write does not follow the fencing
// protocol), and it should not: a write that bypasses the fence is exactly what a
// paused holder's late write is. Instead, Maintain takes a lease on key from locks —
// the application's own lock service, so its token is newer than every token that
// service issued before — and runs fn in a transaction of the fenced pool db bound to
// that lease: fn's statements are fenced like the application's (token stamped,
// version advanced), and Commit refuses if the lease was lost meanwhile. The lease is
// released afterwards (with a deadline of its own, even when ctx is done).
//
// What it means for the application: the rows fn writes now carry the maintenance
// token, so a holder whose lease was granted before it gets ErrFenced on them and must
// re-acquire (its next lease has a newer token). To keep holders working, take the
// same key they take (one lock per row or entity): Maintain then waits its turn like
// any holder. Keep fn short; the lease is renewed by its watchdog while fn runs.
//
// fn receives the lease-bound context; pass it to the statements. An error from fn
// rolls the transaction back and is returned as it is.
func Maintain(ctx context.Context, db *sql.DB, locks *lockclient.Client, key string, fn func(ctx context.Context, tx *sql.Tx) error) (err error) {
	if db == nil || locks == nil || fn == nil {
		return configErr("Maintain: db, locks and fn are required")
	}
	if !fencedPool(ctx, db) {
		return configErr("Maintain: db is not a fenced pool (open it with a fenced driver name or fencedsql.OpenDB): its writes would carry no token, and an older lease's holder could overwrite them")
	}
	lease, err := locks.Acquire(ctx, key)
	if err != nil {
		return fmt.Errorf("fencedsql: Maintain: acquiring %q: %w", key, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if rerr := lease.Release(rctx); rerr != nil && err == nil && !errors.Is(rerr, lockclient.ErrLeaseLost) {
			err = fmt.Errorf("fencedsql: Maintain: releasing %q: %w", key, rerr)
		}
	}()
	lctx := WithLease(ctx, lease)
	tx, err := db.BeginTx(lctx, nil)
	if err != nil {
		return fmt.Errorf("fencedsql: Maintain: %w", err)
	}
	if err := fn(lctx, tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fencedsql: Maintain: commit: %w", err)
	}
	return nil
}

// fencedPool reports whether db is a fenced pool: its driver is this package's, under
// any wrappers that expose theirs with an Unwrap() driver.Driver method, or — for a
// wrapper whose driver does not (otelsql) — one of its connections is this package's
// under wrappers that expose theirs with Raw() driver.Conn (this package's own Raw is
// never called: it re-arms the connection's checks).
func fencedPool(ctx context.Context, db *sql.DB) bool {
	d := db.Driver()
	for range 16 {
		if _, ok := d.(*wrappedDriver); ok {
			return true
		}
		u, ok := d.(interface{ Unwrap() driver.Driver })
		if !ok || u.Unwrap() == nil {
			break
		}
		d = u.Unwrap()
	}
	sc, err := db.Conn(ctx)
	if err != nil {
		return false
	}
	defer sc.Close()
	fenced := false
	_ = sc.Raw(func(dc any) error {
		for range 16 {
			if _, ok := dc.(*conn); ok {
				fenced = true
				return nil
			}
			r, ok := dc.(interface{ Raw() driver.Conn })
			if !ok {
				return nil
			}
			if dc = r.Raw(); dc == nil {
				return nil
			}
		}
		return nil
	})
	return fenced
}
