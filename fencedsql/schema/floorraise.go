package schema

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// RaiseTokenFloor raises the token floor that the installed guards read to floor: from
// then on the guards refuse every write whose token is below it. It raises every floor
// table a guard in the connection's scope reads (TokenFloors lists them), in one
// transaction — not the floor table of the connection's default schema, which a guard
// installed under another search_path (PostgreSQL) or in another database
// (MySQL/MariaDB) does not read. On MySQL/MariaDB that includes the floor of every
// other database a table of the connection's registry is qualified with (shop.accounts
// registered in home: its guards read shop's floor; red-team rt37c F3), under the same
// locks, so the application's DSN raises every floor its registered tables are held
// to. A floor at or below a table's current one leaves it
// unchanged. At a failover, run it on the new primary with the lock service's LastToken
// + 1 before the application writes there. Run it on a plain connection (the fenced
// driver refuses statements naming the floor), as an account that may write the floor
// tables (the guards' owner).
//
// It returns when no transaction that may have judged a write under the old floor can
// still commit: MySQL/MariaDB's guards read the floor with a shared lock, which the
// raise's UPDATE waits for; on PostgreSQL (dialect.FloorSettler), once the raise has
// committed, it waits until the transactions then open that hold a write lock on a
// guarded table have ended, and fails with a *SettleError (ErrFloorUnsettled) naming
// their sessions when ctx ends first — the floor is raised by then; call it again to
// wait again. A paused holder's open transaction holds it up until it ends; on
// MySQL/MariaDB (dialect.FloorBlockLister) a raise that gives up waiting for it (the
// server's lock wait timeout, or ctx) raises nothing and fails with a *SettleError with
// Blocked set (ErrFloorBlocked) naming the connections that hold row locks, and leaves
// nothing of its own waiting on the server (dialect.FloorWaitBounder: its lock waits
// bounded by ctx, its session ended when ctx ends; red-team rt58d F1).
//
// It creates no floor table. The guards' installation (GuardDDL) creates the one they
// read, so a database with guards always has it; a floor table created where no guard
// reads it would refuse nothing while the raise reported success. With no guard in
// scope that reads a floor it fails with a *FloorError (ErrNoFloorGuard) and writes
// nothing. When, after the raise, a table the database records as guarded (or, on
// PostgreSQL, one of its inheritance children or partitions) is found that no
// floor-reading guard judges — a table registered but fenced by the wrapper alone, a
// child created after the guard, a MariaDB guard that lost its floor trigger, a
// registered table whose guard reads a floor table the raise did not raise (another
// MySQL/MariaDB database whose guards the account cannot see, an ATTACHed SQLite
// database) — it
// fails with a *FloorError (ErrFloorUncovered, Raised) naming them: the floor is
// raised for the other tables, not for those (red-team rt34b F1). A floor table a
// guard reads but that has lost its row gets the row back. On a server that does not
// take writes as a primary (dialect.PrimaryChecker: a replica, MariaDB's read_only;
// dialect.ReplicationLister: MySQL/MariaDB replication configured, running or stopped —
// red-team rt48i F2; a PostgreSQL database with a logical-replication subscription, or
// with default_transaction_read_only on — rt50c F1, F5) it fails with ErrNotPrimary and
// writes nothing, and where the account may not list the replication connections with
// ErrServerRoleUnknown (MariaDB: SLAVE MONITOR or SUPER; MySQL: REPLICATION CLIENT); on
// MariaDB it also waits for the XA transactions prepared at the raise
// (dialect.PreparedLister). The whole call runs on one connection of db, the server
// judged inside the raise's transaction (red-team rt50c F4: a pool whose connections
// reach different servers, a VIP moved at the failover).
func RaiseTokenFloor(ctx context.Context, db *sql.DB, d dialect.Dialect, floor uint64) error {
	return raiseTokenFloor(ctx, db, d, floor, false)
}

// raiseTokenFloor is RaiseTokenFloor; readOnlyOK is RaiseTokenFloorReadOnly's check of
// the server instead of dialect.PrimaryChecker's.
func raiseTokenFloor(ctx context.Context, db *sql.DB, d dialect.Dialect, floor uint64, readOnlyOK bool) error {
	if err := complete("RaiseTokenFloor", d); err != nil {
		return err
	}
	f, ff, err := floorFinder(d, "RaiseTokenFloor")
	if err != nil {
		return err
	}
	if floor > math.MaxInt64 {
		return configErr("RaiseTokenFloor: floor %d exceeds the largest token a BIGINT column holds", floor)
	}
	// One connection for the whole call (red-team rt50c F4): the server judged a
	// primary is the one raised, settled and checked for coverage, even where the
	// pool's next connection reaches another server (a VIP or DNS name moved at the
	// failover, a round-robin proxy, a multi-host address).
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("fencedsql: RaiseTokenFloor: %w", err)
	}
	defer conn.Close()
	registered := registrySchemas(ctx, conn, d)
	sess, err := openRaiseSession(ctx, conn, d)
	if err != nil {
		return err
	}
	defer sess.release(conn) // after the transaction's end (deferred below)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fencedsql: RaiseTokenFloor: %w", err)
	}
	defer tx.Rollback()
	if err := requirePrimary(ctx, tx, d, "RaiseTokenFloor", "a raise there is refused or undone by replication; raise on the primary", readOnlyOK); err != nil {
		return err
	}
	if err := replicatedRaise(ctx, tx, d); err != nil {
		return err
	}
	if l, ok := d.(dialect.FloorInstallLocker); ok {
		for _, q := range l.FloorRaiseLock() {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("fencedsql: RaiseTokenFloor: waiting for guard installations: %w", err)
			}
		}
	}
	tables, err := guardFloors(ctx, tx, ff, "RaiseTokenFloor", true, registered)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := sess.bound(ctx, tx); err != nil {
			return err
		}
		q, args := f.RaiseFloorQuery(t, int64(floor))
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			if b, ok := d.(dialect.FloorBlockLister); ok && (b.FloorLockWait(err) || ctx.Err() != nil) {
				tx.Rollback()      // its own locks: not a blocker to list
				sess.release(conn) // its pool slot, for floorBlocked's connections
				// A fresh connection: the client may have closed conn when ctx ended.
				return floorBlocked(ctx, db, b, err, sess)
			}
			return fmt.Errorf("fencedsql: RaiseTokenFloor: raising %s: %w", t, err)
		}
		if err := floorCopied(ctx, tx, d, "RaiseTokenFloor", t); err != nil {
			return fmt.Errorf("%w (nothing raised)", err)
		}
		// Read back what the write left: a trigger on the floor table, or a column that
		// does not hold a bigint, may have stored less than asked (red-team rt27c F2, F5).
		if got, lost, err := readFloor(ctx, tx, d, t); err != nil {
			return fmt.Errorf("fencedsql: RaiseTokenFloor: reading back %s: %w", t, err)
		} else if lost || got < floor {
			return fmt.Errorf("fencedsql: RaiseTokenFloor: %s holds %d after the raise to %d (a trigger on it, or a floor column that is not a bigint, altered the write): nothing raised; check it (schema.Check): %w", t, got, floor, ErrFloorUnsafe)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fencedsql: RaiseTokenFloor: %w", err)
	}
	if err := settleRaise(ctx, conn, d); err != nil {
		return err
	}
	return floorCovered(ctx, conn, d, "RaiseTokenFloor", true, tables)
}

// replicatedRaise runs the dialect's dialect.ReplicatedRaiser query first in the
// raise's transaction tx (red-team rt42f F3): PostgreSQL commits the raise with
// synchronous_commit = on whatever the session's default, and a MySQL/MariaDB session
// whose writes would stay out of the binary log or be skipped by the replicas
// (sql_log_bin = 0, skip_replication …) is refused with ErrRaiseNotReplicated before
// anything is written: the raise would be reported done, and a failover would forget it.
func replicatedRaise(ctx context.Context, tx *sql.Tx, d dialect.Dialect) error {
	r, ok := d.(dialect.ReplicatedRaiser)
	if !ok {
		return nil
	}
	var unsafe sql.NullString
	if err := tx.QueryRowContext(ctx, r.RaiseSessionQuery()).Scan(&unsafe); err != nil {
		return fmt.Errorf("fencedsql: RaiseTokenFloor: reading the session's replication settings: %w", err)
	}
	if unsafe.String != "" {
		return fmt.Errorf("fencedsql: RaiseTokenFloor: the session's %s keeps the raise from the replicas (a failover would forget it): nothing raised; "+
			"use a connection without that setting (a DSN parameter, the account's or the server's init_connect): %w", unsafe.String, ErrRaiseNotReplicated)
	}
	return nil
}

// settleRaise waits, after a raise has committed, until no transaction that may have
// judged a write under the old floor can still commit (see RaiseTokenFloor).
func settleRaise(ctx context.Context, db querier, d dialect.Dialect) error {
	if p, ok := d.(dialect.PreparedLister); ok {
		if err := settlePrepared(ctx, db, p); err != nil {
			return err
		}
	}
	if s, ok := d.(dialect.FloorSettler); ok {
		return settle(ctx, db, s)
	}
	if r, ok := d.(dialect.FloorLockReader); ok {
		q, args := r.OutdatedFloorReadersQuery()
		schemas, triggers, err := pairs(ctx, db, q, args...)
		if err != nil {
			return fmt.Errorf("fencedsql: RaiseTokenFloor: listing the guards that read the floor without a lock: %w", err)
		}
		if len(triggers) > 0 {
			names := make([]string, len(triggers))
			for i := range triggers {
				names[i] = schemas[i] + "." + triggers[i]
			}
			return fmt.Errorf("fencedsql: RaiseTokenFloor: the floor is raised, but the guard triggers %s, of an earlier version, read it without the lock a raise waits for: a transaction they judged under the old floor may still commit; re-apply the guards (fencedsql-schema -apply): %w",
				strings.Join(names, ", "), ErrFloorUnsettled)
		}
	}
	return nil
}

// floorBlocked is RaiseTokenFloor's answer when its write of the floor gave up waiting
// for the floor row's lock (err: the server's lock wait timeout, or the context's end):
// a *SettleError (Blocked) naming the sessions that hold row locks, listed within a
// few seconds even when ctx has ended (none when they cannot be listed: the listing
// may need a privilege, MySQL's PROCESS). When ctx has ended, it first ends the raise's
// own session (sess.end; SessionLeft when that fails), whose write the server may
// still hold queued (red-team rt58d F1); that session is never listed among the
// blockers.
func floorBlocked(ctx context.Context, db *sql.DB, b dialect.FloorBlockLister, err error, sess *raiseSession) error {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	e := &SettleError{Err: err, Blocked: true}
	own := ""
	if sess != nil {
		own = strconv.FormatInt(sess.id, 10)
		if ctx.Err() != nil {
			e.SessionLeft = sess.end(lctx, db)
		}
	}
	rows, lerr := catalogQuery(db)(lctx, b.FloorBlockersQuery())
	if lerr == nil {
		for _, r := range rows {
			if len(r) > 0 && r[0] != own {
				e.Open = append(e.Open, r[0])
			}
		}
	}
	return e
}

// settle waits until the transactions open when the raise committed have ended
// (dialect.FloorSettler), polling with a growing pause; when ctx ends first — while
// listing them, too — it fails with a *SettleError naming their sessions.
func settle(ctx context.Context, db querier, s dialect.FloorSettler) error {
	ids, pids, err := pairs(ctx, db, s.OpenTransactionsQuery())
	if err != nil {
		return listFailed(ctx, nil, err)
	}
	return waitEnded(ctx, ids, pids, func() ([]string, []string, error) {
		return pairs(ctx, db, s.StillOpenQuery(), strings.Join(ids, ","))
	})
}

// settlePrepared waits until the two-phase transactions prepared when the raise
// committed have ended (dialect.PreparedLister: MariaDB's XA PREPARE gives up the
// shared lock on the floor row that the raise waits for, red-team rt24c F3), as
// settle waits, naming them "XA <id>" in a *SettleError.
func settlePrepared(ctx context.Context, db querier, p dialect.PreparedLister) error {
	list := func() (map[string]bool, error) {
		rows, err := catalogQuery(db)(ctx, p.PreparedQuery())
		if err != nil {
			return nil, err
		}
		ids := map[string]bool{}
		for _, r := range rows {
			if len(r) > 0 {
				ids[xid(r)] = true
			}
		}
		return ids, nil
	}
	at, err := list()
	if err != nil {
		return listFailed(ctx, nil, err)
	}
	named := func(ids map[string]bool) (out []string) {
		for id := range ids {
			out = append(out, "XA "+id)
		}
		slices.Sort(out)
		return out
	}
	return waitEnded(ctx, named(at), named(at), func() ([]string, []string, error) {
		now, err := list()
		if err != nil {
			return nil, nil, err
		}
		for id := range at {
			if !now[id] {
				delete(at, id)
			}
		}
		return named(at), named(at), nil
	})
}

// xid names a prepared transaction of a PreparedLister row: XA RECOVER's formatID,
// gtrid_length, bqual_length and data as the XID an XA ROLLBACK or XA COMMIT takes
// (X'gtrid',X'bqual',formatID: the data may be binary); another shape, by its last
// column.
func xid(r []string) string {
	if len(r) == 4 {
		g, errG := strconv.Atoi(r[1])
		b, errB := strconv.Atoi(r[2])
		if errG == nil && errB == nil && g >= 0 && b >= 0 && g+b == len(r[3]) {
			return fmt.Sprintf("X'%x',X'%x',%s", r[3][:g], r[3][g:], r[0])
		}
	}
	return r[len(r)-1]
}

// waitEnded polls still, with a growing pause, until it lists no transaction (ids);
// pids names them for a *SettleError when ctx ends first.
func waitEnded(ctx context.Context, ids, pids []string, still func() (ids, pids []string, err error)) error {
	pause := 2 * time.Millisecond
	for len(ids) > 0 {
		select {
		case <-ctx.Done():
			return &SettleError{Open: pids, Err: ctx.Err()}
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
		open, openPids, err := still()
		if err != nil {
			if ctx.Err() != nil {
				return &SettleError{Open: pids, Err: ctx.Err()}
			}
			return fmt.Errorf("fencedsql: RaiseTokenFloor: waiting for the transactions open at the raise: %w", err)
		}
		ids, pids = open, openPids
	}
	return nil
}

// listFailed is the error of a failed first listing of the transactions to wait for.
func listFailed(ctx context.Context, pids []string, err error) error {
	if ctx.Err() != nil {
		return &SettleError{Open: pids, Err: ctx.Err()}
	}
	return fmt.Errorf("fencedsql: RaiseTokenFloor: listing the transactions open at the raise: %w", err)
}

// pairs runs q and returns its first two columns, one string each per row.
func pairs(ctx context.Context, db querier, q string, args ...any) (a, b []string, err error) {
	rows, err := catalogQuery(db)(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		if len(r) < 2 {
			return nil, nil, fmt.Errorf("%d columns, want 2", len(r))
		}
		a, b = append(a, r[0]), append(b, r[1])
	}
	return a, b, nil
}
