package failover

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// schema.RaiseTokenFloor commits with synchronous_commit = on whatever the session's
// default (red-team rt42f F3). With the owner role's default at local and the
// synchronous standby no longer receiving, the raise used to return nil at once; a
// failover to that standby then forgot it (floor back at 10, token 50 writing). Now
// the raise's commit waits for the synchronous standby: it fails when its context
// ends, and is never reported done while the standby lacks it.
func TestRaiseTokenFloorWaitsForSynchronousStandby(t *testing.T) {
	env := needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pair, err := NewPostgres(ctx, env, Sync)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })
	if _, err := Install(ctx, pair.DSN(), pgDB); err != nil {
		t.Fatal(err)
	}
	if err := pgDo(ctx, pair.DSN(), func(db *sql.DB) error {
		if err := schema.RaiseTokenFloor(ctx, db, pgDB.Dialect, 10); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `ALTER ROLE fenced SET synchronous_commit = local`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The synchronous standby stops receiving.
	if err := pgDo(ctx, pair.replica.dsn(), func(db *sql.DB) error {
		if _, err := db.ExecContext(ctx, `ALTER SYSTEM SET primary_conninfo = ''`); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `SELECT pg_reload_conf()`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "the WAL receiver gone", pair.replica.srv, func(ctx context.Context) error {
		return pgDo(ctx, pair.replica.dsn(), func(db *sql.DB) error {
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_wal_receiver`).Scan(&n); err != nil {
				return err
			}
			if n != 0 {
				return fmt.Errorf("WAL receiver still running")
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
	defer rcancel()
	if err := pgDo(rctx, pair.DSN(), func(db *sql.DB) error {
		return schema.RaiseTokenFloor(rctx, db, pgDB.Dialect, 100)
	}); err == nil {
		t.Fatal("RaiseTokenFloor(100) returned nil under a role default of synchronous_commit = local while the synchronous standby received nothing: a failover to it forgets the raise")
	}
}
