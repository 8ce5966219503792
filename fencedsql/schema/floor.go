package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The token floor (docs/design.md, G16: tokens never go back). The database remembers
// the highest token that wrote each row, but ordinary operations make it forget, or
// make the lock service forget:
//
//   - a failover to a replica that had not received the newest writes (asynchronous
//     replication) brings rows back to older tokens, so a holder whose lease expired
//     before the failover would win again on the new primary;
//   - a restore of the database from a backup brings its rows and its floor back to the
//     backup's time, likewise (raise the floor after it as after a failover: the
//     failover hooks do not fire on a restore);
//   - a lock service that is switched, rebuilt or restored starts counting below the
//     tokens the rows carry.
//
// The floor is a one-row table, FloorTable, that the database-side guards (Guarder)
// consult on every guarded INSERT and UPDATE: a write whose token is below the floor
// is refused with ErrBelowFloor (and ErrFenced), whoever sends it. Raising it to the lock
// service's last token + 1 at a failover (RaiseTokenFloor; deploy/failover has the hook
// scripts) refuses every lease granted before it; raising the lock service's floor above
// MaxToken before switching it (lockclient.FloorRaiser) keeps its new tokens above every
// token the rows carry. The floor only goes up, costs no round trip (the guard reads
// it inside the statement), and needs the guards installed (fencedsql-schema -apply):
// RaiseTokenFloor and TokenFloor work on the floor tables the installed guards read
// (dialect.FloorFinder), and fail with ErrNoFloorGuard where no guard reads one.

// Floor is one floor table that installed guards read, and the floor it holds.
type Floor struct {
	Table string // qualified, unquoted: "app.fencedsql_floor"
	Floor uint64
	// Lost: the table has lost its one row (Floor is 0). The guards then refuse every
	// write they do not accept on their fast path (PostgreSQL: below the floor's copy;
	// MySQL/MariaDB, SQLite: every write) — not "no floor". RaiseTokenFloor writes the
	// row back.
	Lost bool
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func floorFinder(d dialect.Dialect, what string) (dialect.Floorer, dialect.FloorFinder, error) {
	f, ok := d.(dialect.Floorer)
	if !ok || d == nil {
		return nil, nil, configErr("%s: the dialect has no token floor", what)
	}
	ff, ok := d.(dialect.FloorFinder)
	if !ok {
		return nil, nil, configErr("%s: the dialect cannot tell which floor its guards read (no dialect.FloorFinder)", what)
	}
	return f, ff, nil
}

// guardFloors returns the floor tables the installed guards in the connection's scope
// read (dialect.FloorFinder), and those of the schemas in registered (registrySchemas:
// a registered table of another MySQL/MariaDB database, whose guards read that
// database's floor) that the dialect lists out of scope, or a *FloorError when there is
// none. write: the caller writes them (the raise). A table the dialect marks as one
// the running role may not read (or, with write, write) without running another role's
// code fails the call: a floor skipped would stay unraised.
func guardFloors(ctx context.Context, q querier, ff dialect.FloorFinder, op string, write bool, registered map[string]bool) ([]dialect.TableName, error) {
	query, args := ff.GuardFloorsQuery()
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("fencedsql: %s: listing the floor tables the guards read: %w", op, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("fencedsql: %s: listing the floor tables the guards read: %w", op, err)
	}
	var in []dialect.TableName
	var elsewhere, unsafe []string
	for rows.Next() {
		var schema string
		var inScope int64
		readable, writable := true, true
		dest := []any{&schema, &inScope}
		if len(cols) >= 4 {
			dest = append(dest, &readable, &writable)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("fencedsql: %s: listing the floor tables the guards read: %w", op, err)
		}
		t := dialect.CatalogName(schema, dialect.FloorTable)
		switch {
		case inScope != 1 && !registered[dialect.SchemaKey(ff, schema)]:
			elsewhere = append(elsewhere, t.String())
		case !readable || write && !writable:
			unsafe = append(unsafe, t.String())
		default:
			in = append(in, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fencedsql: %s: listing the floor tables the guards read: %w", op, err)
	}
	if len(unsafe) > 0 {
		what := "read"
		if write {
			what = "write"
		}
		return nil, fmt.Errorf("fencedsql: %s: the guards read the floor table(s) %s, which this role may not %s without running another role's code (not a plain table of its own without row security, its floor not a NOT NULL bigint, or carrying a foreign key, trigger or rule the guards did not put there, or its sync trigger not firing always): run it as the guards' owner, and check those tables (schema.Check reports what to restore): %w",
			op, strings.Join(unsafe, ", "), what, ErrFloorUnsafe)
	}
	if len(in) == 0 {
		return nil, &FloorError{Op: op, Elsewhere: elsewhere}
	}
	return in, nil
}

// readFloor returns the floor table's floor, and whether it has lost its row (floor 0).
func readFloor(ctx context.Context, q querier, d dialect.Dialect, t dialect.TableName) (floor uint64, lost bool, err error) {
	var f sql.NullInt64
	if err := q.QueryRowContext(ctx, "SELECT MAX(floor) FROM "+t.Quote(d.QuoteIdent)).Scan(&f); err != nil {
		return 0, false, fmt.Errorf("fencedsql: reading %s: %w", t, err)
	}
	if !f.Valid {
		return 0, true, nil
	}
	return uint64(max(f.Int64, 0)), false, nil
}

// floorCopied fails with ErrFloorUnsafe when the copy of floor table t that the
// guards' fast path reads (dialect.FloorCopier: PostgreSQL's sequence, kept by the
// floor's sync trigger) is below t's floor: the guards then accept every token at or
// above the copy, below the floor t holds (red-team rt25a F6: the sync trigger
// disabled; rt50a F1: not firing always, and the floor written by logical
// replication's apply worker). It is the one check of the copy: RaiseTokenFloor runs
// it after its write, TokenFloors and schema.Check on every floor they report (a
// floor whose copy is below it is not the floor in force). Nothing for a dialect
// without a copy, or for a table that has lost its row (Floor.Lost says that).
func floorCopied(ctx context.Context, q querier, d dialect.Dialect, op string, t dialect.TableName) error {
	c, ok := d.(dialect.FloorCopier)
	if !ok {
		return nil
	}
	query, args := c.FloorCopiedQuery(t)
	var copied sql.NullString
	if err := q.QueryRowContext(ctx, query, args...).Scan(&copied); err != nil {
		return fmt.Errorf("fencedsql: %s: reading %s's copy: %w", op, t, err)
	}
	if !dialect.CatalogBool(copied.String) {
		return fmt.Errorf("fencedsql: %s: %s's copy, which the guards' fast path reads, is below its floor (its sync trigger disabled, or not firing always and the floor written where it does not fire: a logical replication apply worker, a session with session_replication_role = replica): the guards accept tokens below the floor; restore the sync trigger (schema.Check's Fix, fencedsql-schema -apply), then raise the floor again: %w", op, t, ErrFloorUnsafe)
	}
	return nil
}

// floorProblems returns the floor tables in the connection's scope that the installed
// guards read and that have lost their row, and floorCopied's errors for those whose
// copy is below their floor (staleCopies) — none when no guard reads a floor there.
func floorProblems(ctx context.Context, db *sql.DB, d dialect.Dialect) (lost []string, stale []error, err error) {
	if _, ok := d.(dialect.FloorFinder); !ok {
		return nil, nil, nil
	}
	tables, err := floorTables(ctx, db, d)
	if errors.Is(err, ErrNoFloorGuard) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	floors, err := readFloors(ctx, db, d, tables)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range floors {
		if f.Lost {
			lost = append(lost, f.Table)
		}
	}
	stale, err = staleCopies(ctx, db, d, "schema.Check", tables, floors)
	return lost, stale, err
}

// staleCopies returns floorCopied's error for each of tables (floors: their floors,
// readFloors' answer) that has not lost its row and whose copy is below its floor; a
// failed read fails it.
func staleCopies(ctx context.Context, q querier, d dialect.Dialect, op string, tables []dialect.TableName, floors []Floor) ([]error, error) {
	var stale []error
	for i, t := range tables {
		if i < len(floors) && floors[i].Lost {
			continue
		}
		switch err := floorCopied(ctx, q, d, op, t); {
		case errors.Is(err, ErrFloorUnsafe):
			stale = append(stale, err)
		case err != nil:
			return nil, err
		}
	}
	return stale, nil
}

// TokenFloors returns each floor table that the installed guards in the connection's
// scope read (dialect.FloorFinder: PostgreSQL, every schema of the database whose guards
// read one; MySQL/MariaDB, the connection's database, or every database whose guards
// the account can see when the DSN names none; SQLite, the main database), and the
// floor table of each other database a registered table is qualified with
// (MySQL/MariaDB: shop.accounts in home's registry, whose guards read shop's floor;
// registrySchemas), with its floor, in the order of the tables' names. It fails with a *FloorError (ErrNoFloorGuard)
// when no guard there reads one, and with a *FloorError (ErrFloorUncovered) naming them
// when tables the database records as guarded, or their PostgreSQL children and
// partitions, are not held to the floor by any floor-reading guard (the floor reported
// would not be in force there: see unfloored) — among them a registered table whose
// guard reads a floor table not listed (a table of another MySQL/MariaDB database whose
// guards the account cannot see; of an ATTACHed SQLite database). It fails with
// ErrFloorUnsafe when a floor's copy that the guards' fast path reads is below the
// floor (floorCopied, PostgreSQL: the floor reported would not be in force). Run it on
// a plain connection or a fenced one (it only reads).
func TokenFloors(ctx context.Context, db *sql.DB, d dialect.Dialect) ([]Floor, error) {
	if err := complete("TokenFloor", d); err != nil {
		return nil, err
	}
	tables, err := floorTables(ctx, db, d)
	if err != nil {
		return nil, err
	}
	floors, err := readFloors(ctx, db, d, tables)
	if err != nil {
		return nil, err
	}
	if stale, err := staleCopies(ctx, db, d, "TokenFloor", tables, floors); err != nil {
		return nil, err
	} else if len(stale) > 0 {
		return nil, stale[0]
	}
	if err := floorCovered(ctx, db, d, "TokenFloor", false, tables); err != nil {
		return nil, err
	}
	return floors, nil
}

// tokenFloors is TokenFloors without the coverage check: the floor tables the guards
// read and their floors (MaxToken and Check's lost-row report need them whatever the
// coverage).
func tokenFloors(ctx context.Context, db querier, d dialect.Dialect) ([]Floor, error) {
	tables, err := floorTables(ctx, db, d)
	if err != nil {
		return nil, err
	}
	return readFloors(ctx, db, d, tables)
}

// floorTables lists the floor tables TokenFloors reports: those the guards in the
// connection's scope read, and those of the schemas the registries' tables are
// qualified with (guardFloors, registrySchemas).
func floorTables(ctx context.Context, db querier, d dialect.Dialect) ([]dialect.TableName, error) {
	_, ff, err := floorFinder(d, "TokenFloor")
	if err != nil {
		return nil, err
	}
	return guardFloors(ctx, db, ff, "TokenFloor", false, registrySchemas(ctx, db, d))
}

// readFloors reads the floor of each of tables.
func readFloors(ctx context.Context, db querier, d dialect.Dialect, tables []dialect.TableName) ([]Floor, error) {
	out := make([]Floor, 0, len(tables))
	for _, t := range tables {
		f, lost, err := readFloor(ctx, db, d, t)
		if err != nil {
			return nil, err
		}
		out = append(out, Floor{Table: t.String(), Floor: f, Lost: lost})
	}
	return out, nil
}

// TokenFloor returns the token floor in force in db's database: the floor the installed
// guards read (see TokenFloors), the lowest when guards in several schemas (databases)
// read different floor tables — the floor every guarded write is held to. With no
// guard that reads a floor it fails with a *FloorError (ErrNoFloorGuard), not 0: no
// floor is enforced there at all, which an operator checking a failover must not
// mistake for a floor not raised yet. A floor table that has lost its row fails it with
// a *FloorLostError (ErrFloorLost): the guards refuse writes then, which 0 would not
// say. A guarded table no floor-reading guard judges fails it with a *FloorError
// (ErrFloorUncovered), as TokenFloors: a health check comparing the floor with the lock
// service must not take it for in force there.
func TokenFloor(ctx context.Context, db *sql.DB, d dialect.Dialect) (uint64, error) {
	floors, err := TokenFloors(ctx, db, d)
	if err != nil {
		return 0, err
	}
	low := uint64(math.MaxUint64)
	var lost []string
	for _, f := range floors {
		low = min(low, f.Floor)
		if f.Lost {
			lost = append(lost, f.Table)
		}
	}
	if len(lost) > 0 {
		return 0, &FloorLostError{Tables: lost}
	}
	return low, nil
}

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

// isMissingTable reports whether err says the floor table does not exist (no guard
// installed yet): the registry's test answers that for any table.
func isMissingTable(d dialect.Dialect, err error) bool {
	r, ok := d.(dialect.Registrar)
	return ok && r.NoRegistry(err)
}
