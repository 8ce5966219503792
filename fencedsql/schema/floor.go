package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The token floor (docs/design.md, G14: tokens never go back). The database remembers
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

// isMissingTable reports whether err says the floor table does not exist (no guard
// installed yet): the registry's test answers that for any table.
func isMissingTable(d dialect.Dialect, err error) bool {
	r, ok := d.(dialect.Registrar)
	return ok && r.NoRegistry(err)
}
