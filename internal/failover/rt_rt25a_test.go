package failover

// Red-team rt25a: RaiseTokenFloor's refusal of a non-primary (dialect.PrimaryChecker).

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// TestRTrt25aMariaDBRaiseOnReplicaReadWrite (fail-open; rt24c F4 half-fixed). MariaDB's
// PrimaryChecker is `SELECT @@GLOBAL.read_only = 0`: a replica is recognised only by
// read_only. But read_only is OFF by default in MariaDB, and a replica does not need it
// (many run without it; the failover tooling often flips it only at promotion). rt24c's
// scenario with the replica's read_only OFF: the hook, fired on the still-replicating
// server before the promotion finished, raises the floor to 100 there and returns nil;
// the relay log then applies the old primary's raise (floor 60) as a row event whose
// after-image overwrites 100; after the promotion a stale token 70 writes.
//
// Right behaviour (as rt24c F4 asked): RaiseTokenFloor also refuses (ErrNotPrimary) on
// a server with a replication connection configured or running (SHOW ALL SLAVES STATUS
// non-empty, or @@GLOBAL.gtid_slave_pos being applied by a running SQL thread), not only
// on read_only.
func TestRTrt25aMariaDBRaiseOnReplicaReadWrite(t *testing.T) {
	env := needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tmpl, err := NewMariaDBTemplate(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tmpl.Close() })
	pair, err := NewMariaDB(ctx, tmpl, Async)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })
	if _, err := Install(ctx, pair.DSN(), myDB); err != nil {
		t.Fatal(err)
	}
	primary, err := sql.Open("mysql", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	if err := schema.RaiseTokenFloor(ctx, primary, myDB.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	var pos string
	if err := primary.QueryRowContext(ctx, `SELECT @@GLOBAL.gtid_binlog_pos`).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	if err := pair.applied(ctx, pair.replica, pos); err != nil {
		t.Fatal(err)
	}
	replicaDSN := pair.replica.dsn(mariaDBDatabase)
	replica, err := sql.Open("mysql", replicaDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	// The replica lags: its SQL thread is behind (stopped here, for determinism). It runs
	// with MariaDB's default gtid_strict_mode = OFF (the harness turns it on; with it on
	// the hook's local write stops replication with error 1950 instead).
	for _, s := range []string{`STOP SLAVE SQL_THREAD`, `SET GLOBAL gtid_strict_mode = OFF`, `SET GLOBAL read_only = OFF`} {
		if _, err := replica.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// The old primary's last raise, 60, received by the replica but not applied yet.
	if err := schema.RaiseTokenFloor(ctx, primary, myDB.Dialect, 60); err != nil {
		t.Fatal(err)
	}
	if err := primary.QueryRowContext(ctx, `SELECT @@GLOBAL.gtid_binlog_pos`).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	// The hook, on the replica (too early / wrong host), with the lock service's last + 1.
	var ro int
	if err := replica.QueryRowContext(ctx, `SELECT @@GLOBAL.read_only`).Scan(&ro); err != nil {
		t.Fatal(err)
	}
	hookErr := schema.RaiseTokenFloor(ctx, replica, myDB.Dialect, 100)
	t.Logf("replica read_only=%d; RaiseTokenFloor(100) on it: %v", ro, hookErr)
	if hookErr != nil {
		if !errors.Is(hookErr, schema.ErrNotPrimary) {
			t.Fatalf("RaiseTokenFloor on the replica: %v, want ErrNotPrimary", hookErr)
		}
		return // refused: the operator knows the floor is not raised
	}
	floorAfterHook, _ := schema.TokenFloor(ctx, replica, myDB.Dialect)
	// The SQL thread catches up (the promotion applies the relay log first), then the
	// promotion.
	if _, err := replica.ExecContext(ctx, `START SLAVE SQL_THREAD`); err != nil {
		t.Fatal(err)
	}
	if err := pair.applied(ctx, pair.replica, pos); err != nil {
		t.Fatal(err)
	}
	if err := pair.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	floor, err := schema.TokenFloor(ctx, replica, myDB.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	fenced, err := sql.Open(myDB.FencedDriver, FencedDSN(pair.DSN()))
	if err != nil {
		t.Fatal(err)
	}
	defer fenced.Close()
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 70), myDB.Upsert, 7, "stale")
	if floor < 100 || !errors.Is(werr, fencedsql.ErrBelowFloor) {
		t.Errorf("RaiseTokenFloor(100) on the still-replicating server (read_only = OFF, a replication connection configured and its IO thread running) returned nil (floor then %d); after the relay log applied and the promotion the floor is %d, and a write under the stale token 70 gave %v (want the raise refused, or the floor kept at 100 and ErrBelowFloor)", floorAfterHook, floor, werr)
	}
}
