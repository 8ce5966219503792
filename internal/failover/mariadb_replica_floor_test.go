package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// Two checks on one asynchronous MariaDB pair (one pair start for both), each
// independent of the other's outcome.
//
// RaiseRefusedInUnreplicatedSession (red-team rt42f F3): a raise through a session
// whose writes stay out of the binary log (sql_log_bin = 0, a DSN parameter
// go-sql-driver/mysql sends as SET) or are marked for the replicas to skip
// (skip_replication = 1) returned nil while the caught-up replica kept the old floor: a
// failover forgot it. Now refused with ErrRaiseNotReplicated, nothing written.
//
// FencedPoolOnReplicaRefused (red-team rt42f F2): a fenced pool on a replica — read_only
// off (MariaDB's default for a replica) or on with an account that has READ_ONLY ADMIN
// — acknowledged a stale token's UPDATE and its re-insert of a key the primary deleted
// under a newer token, judged by the replica's lagging floor and rows, never reaching
// the primary. The pool's per-connection session check now refuses guarded writes
// there (ErrNotPrimary, a *SessionError), as RaiseTokenFloor does.
func TestMariaDBReplicaFloorChecks(t *testing.T) {
	env := needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pair := asyncMariaDBPair(t, ctx, env)
	if _, err := Install(ctx, pair.DSN(), myDB); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("mysql", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	replicaDSN := pair.replica.dsn(mariaDBDatabase)
	t.Run("FencedPoolOnReplicaRefused", func(t *testing.T) {
		primary, err := sql.Open(myDB.FencedDriver, FencedDSN(pair.DSN()))
		if err != nil {
			t.Fatal(err)
		}
		defer primary.Close()
		for _, id := range []int64{1, 2} {
			if _, err := primary.ExecContext(fencedsql.WithToken(ctx, 30), myDB.Upsert, id, "zero"); err != nil {
				t.Fatal(err)
			}
		}
		waitReplicaRow(ctx, t, "mysql", replicaDSN, `SELECT count(*) FROM `+Table+` WHERE id = 2`, pair.replica.srv)
		if err := pair.Detach(ctx); err != nil { // the replica lags
			t.Fatal(err)
		}
		for _, q := range []string{`UPDATE ` + Table + ` SET holder = 'B' WHERE id = 1`, `DELETE FROM ` + Table + ` WHERE id = 2`} {
			if _, err := primary.ExecContext(fencedsql.WithToken(ctx, 50), q); err != nil {
				t.Fatal(err)
			}
		}
		if err := schema.RaiseTokenFloor(ctx, raw, myDB.Dialect, 51); err != nil {
			t.Fatal(err)
		}
		for _, readOnly := range []string{"OFF", "ON"} {
			if err := myDo(ctx, replicaDSN, func(db *sql.DB) error {
				_, err := db.ExecContext(ctx, `SET GLOBAL read_only = `+readOnly)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			pool, err := sql.Open(myDB.FencedDriver, FencedDSN(replicaDSN))
			if err != nil {
				t.Fatal(err)
			}
			stale := fencedsql.WithToken(ctx, 40)
			for _, c := range []struct {
				q    string
				args []any
			}{
				{`UPDATE ` + Table + ` SET holder = 'A' WHERE id = 1`, nil},
				{myDB.Upsert, []any{2, "A"}},
			} {
				_, err := pool.ExecContext(stale, c.q, c.args...)
				var se *fencedsql.SessionError
				if !errors.Is(err, fencedsql.ErrNotPrimary) || !errors.As(err, &se) || !se.NotPrimary {
					t.Errorf("read_only=%s: token 40 %q through a fenced pool on the replica: %v; want ErrNotPrimary (a *SessionError)", readOnly, c.q, err)
				}
			}
			var holder string
			if err := pool.QueryRowContext(ctx, `SELECT holder FROM `+Table+` WHERE id = 1`).Scan(&holder); err != nil || holder != "zero" {
				t.Errorf("read_only=%s: a read on the replica: %q, %v; want the replica's row (reads are not refused)", readOnly, holder, err)
			}
			pool.Close()
		}
	})
	t.Run("RaiseRefusedInUnreplicatedSession", func(t *testing.T) {
		before, err := schema.TokenFloor(ctx, raw, myDB.Dialect)
		if err != nil {
			t.Fatal(err)
		}
		for i, param := range []string{"sql_log_bin=0", "skip_replication=1"} {
			want := before + uint64(100+i)
			db, err := sql.Open("mysql", pair.DSN()+"&"+param)
			if err != nil {
				t.Fatal(err)
			}
			raiseErr := schema.RaiseTokenFloor(ctx, db, myDB.Dialect, want)
			db.Close()
			if !errors.Is(raiseErr, schema.ErrRaiseNotReplicated) {
				t.Errorf("RaiseTokenFloor(%d) through a DSN with %s: %v; want ErrRaiseNotReplicated", want, param, raiseErr)
			}
		}
		if f, err := schema.TokenFloor(ctx, raw, myDB.Dialect); err != nil || f != before {
			t.Errorf("the primary's floor after the refused raises: %d, %v; want %d (nothing written)", f, err, before)
		}
	})
}

// Red-team rt24c: G14 "Tokens never go back" across a database failover, on the
// harness's own primary/replica pairs.

// TestMariaDBRaiseOnReplicaRefused (fail-open; the procedure run on the wrong
// server / too early). The floor hook is meant for the new primary, after the
// promotion. Run against a server that is still a replica (read_only = ON, its SQL
// thread applying the old primary's binary log: the hook fired before the promotion
// finished, or on the wrong host), schema.RaiseTokenFloor returns nil — the hook's
// account has READ_ONLY ADMIN, as the owner account of a MariaDB server usually does
// (ALL PRIVILEGES) — and the floor is raised there. Then the relay log applies the old
// primary's own later raise of the floor as a row event, whose after-image (floor 60)
// overwrites the hook's 100 (MariaDB's default gtid_strict_mode = OFF; with it on,
// replication stops with error 1950 instead, which at least is loud): "an upsert that keeps the higher floor" is judged on the
// old primary, not on the replica. After the promotion the floor is 60, the operator's
// log says 100, and a stale token 70 writes.
//
// Right behaviour: RaiseTokenFloor refuses, with a typed error, to raise on a server
// that is a replica (@@read_only = 1, or a replication connection configured/running:
// SHOW SLAVE STATUS / SHOW ALL SLAVES STATUS), so that the hook fails loudly ("NOT
// raised") instead of reporting a raise that replication undoes.
func TestMariaDBRaiseOnReplicaRefused(t *testing.T) {
	// read_only ON, and OFF (MariaDB's default for a replica: seen by its replication
	// threads, red-team rt25a F5).
	for _, readOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("read_only=%v", readOnly), func(t *testing.T) { raiseOnReplica(t, readOnly) })
	}
}

func raiseOnReplica(t *testing.T, readOnly bool) {
	env := needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pair := asyncMariaDBPair(t, ctx, env)
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
	stmts := []string{`STOP SLAVE SQL_THREAD`, `SET GLOBAL gtid_strict_mode = OFF`}
	if !readOnly {
		stmts = append(stmts, `SET GLOBAL read_only = OFF`)
	}
	for _, s := range stmts {
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
		t.Errorf("RaiseTokenFloor(100) on the still-replicating server returned nil (floor then %d); after the relay log applied and the promotion the floor is %d, and a write under the stale token 70 gave %v (want the raise refused, or the floor kept at 100 and ErrBelowFloor)", floorAfterHook, floor, werr)
	}
}

// TestMariaDBRaiseWaitsForPreparedXAAfterFailover (fail-open; the failover form of
// dialects/mysql TestRaiseWaitsForPreparedXA). On the old primary a writer (a plain
// connection or another application's XA transaction manager; the fenced pool refuses
// XA) writes row 1 under its token 8 in an XA transaction and PREPAREs it; the primary
// dies; MariaDB replicated the XA PREPARE, so the promoted replica holds the
// transaction prepared (XA RECOVER lists it). The documented procedure runs:
// RaiseTokenFloor(LastToken+1 = 10) on the new primary returns nil at once (InnoDB
// released the prepared transaction's shared lock on the floor row at PREPARE), the
// hook reports success, and the transaction manager's recovery then commits the
// prepared write: row 1 carries token 8 with the floor 10 in force.
//
// Right behaviour: the raise does not report success while a prepared transaction that
// wrote a guarded table exists on the new primary: it fails with ErrFloorUnsettled
// naming it (as PostgreSQL's settle does for prepared transactions), so the operator
// rolls it back (XA ROLLBACK) before the application writes.
func TestMariaDBRaiseWaitsForPreparedXAAfterFailover(t *testing.T) {
	env := needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pair := asyncMariaDBPair(t, ctx, env)
	if _, err := Install(ctx, pair.DSN(), myDB); err != nil {
		t.Fatal(err)
	}
	fenced, err := sql.Open(myDB.FencedDriver, FencedDSN(pair.DSN()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 5), myDB.Upsert, 1, "A"); err != nil {
		t.Fatal(err)
	}
	fenced.Close()
	xa, err := sql.Open("mysql", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	xa.SetMaxOpenConns(1)
	for _, s := range []string{"XA START 'rt24c'",
		"UPDATE " + Table + " SET holder = 'stale', fence_token = 8, version = version + 1 WHERE id = 1",
		"XA END 'rt24c'", "XA PREPARE 'rt24c'"} {
		if _, err := xa.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var pos string
	if err := xa.QueryRowContext(ctx, `SELECT @@GLOBAL.gtid_binlog_pos`).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	xa.Close()
	if err := pair.applied(ctx, pair.replica, pos); err != nil {
		t.Fatal(err)
	}
	if err := pair.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	np, err := sql.Open("mysql", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer np.Close()
	var recovered int
	if rows, err := np.QueryContext(ctx, "XA RECOVER"); err == nil {
		for rows.Next() {
			recovered++
		}
		rows.Close()
	}
	if recovered == 0 {
		t.Fatal("the prepared XA transaction did not survive the promotion (MariaDB 10.5+ replicates XA PREPARE)")
	}
	raiseCtx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	raiseErr := schema.RaiseTokenFloor(raiseCtx, np, myDB.Dialect, 10) // the hook: LastToken 9 + 1
	rcancel()
	if raiseErr != nil {
		if !errors.Is(raiseErr, schema.ErrFloorUnsettled) || !strings.Contains(raiseErr.Error(), "XA ") {
			t.Fatalf("RaiseTokenFloor over the recovered prepared XA transaction: %v, want ErrFloorUnsettled naming it", raiseErr)
		}
		return
	}
	_, commitErr := np.ExecContext(ctx, "XA COMMIT 'rt24c'")
	var tok, floor int64
	if err := np.QueryRowContext(ctx, "SELECT (SELECT fence_token FROM "+Table+" WHERE id = 1), (SELECT floor FROM fencedsql_floor WHERE id = 1)").Scan(&tok, &floor); err != nil {
		t.Fatal(err)
	}
	t.Errorf("after the failover, %d prepared XA transaction(s) on the new primary; RaiseTokenFloor(10) returned nil; XA COMMIT then: %v; row 1 carries token %d with the floor %d in force", recovered, commitErr, tok, floor)
}
