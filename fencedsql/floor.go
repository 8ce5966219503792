package fencedsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The token floor (docs/design.md, G16: tokens never go back). The database remembers
// the highest token that wrote each row, but two ordinary operations make it forget, or
// make the lock service forget:
//
//   - a failover to a replica that had not received the newest writes (asynchronous
//     replication) brings rows back to older tokens, so a holder whose lease expired
//     before the failover would win again on the new primary;
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
// it inside the statement), and needs the guards installed (fencedsql-schema -apply).

// ErrBelowFloor means a write carried a token below the database's token floor: the
// lease was granted before a failover (or before a lock-service switch) raised the
// floor, or the lock service hands out tokens the database has already passed. Nothing
// changed. errors.Is(err, ErrFenced) holds too.
var ErrBelowFloor = errors.New("fencedsql: token below the database's token floor")

// floorHint names the procedure a BelowFloorError points to.
const floorHint = "if this holder's lease predates a failover or a lock-service switch, it is stale: stop writing and acquire again; " +
	"if every new lease gets this error, the lock service issues tokens below the database's: raise its floor above " +
	"`fencedsql-schema -max-token` (lockfloor -raise N; README, \"Switching or rebuilding the lock service\")"

// BelowFloorError is returned when the database-side guard refused a write because its
// token is below the floor. errors.Is(err, ErrBelowFloor) and errors.Is(err, ErrFenced)
// hold; the driver's error stays reachable.
type BelowFloorError struct {
	Table string // the table, when known
	Token uint64 // the token the statement carried (0 outside the wrapper)
	Err   error  // the driver's error
}

func (e *BelowFloorError) Error() string {
	msg := "fencedsql: write"
	if e.Table != "" {
		msg += " to " + e.Table
	}
	if e.Token != 0 {
		msg += " with token " + strconv.FormatUint(e.Token, 10)
	}
	return msg + " refused: the token is below the database's token floor; nothing was changed (" + floorHint + "): " + e.Err.Error()
}

// Unwrap returns ErrBelowFloor, ErrFenced and the driver's error.
func (e *BelowFloorError) Unwrap() []error { return []error{ErrBelowFloor, ErrFenced, e.Err} }

func floorer(d dialect.Dialect, what string) (dialect.Floorer, error) {
	f, ok := d.(dialect.Floorer)
	if !ok || d == nil {
		return nil, configErr("%s: the dialect has no token floor", what)
	}
	return f, nil
}

// TokenFloor returns the token floor of db's database (0 when FloorTable has no row).
// Run it on a plain connection or a fenced one (it only reads).
func TokenFloor(ctx context.Context, db *sql.DB, d dialect.Dialect) (uint64, error) {
	if _, err := floorer(d, "TokenFloor"); err != nil {
		return 0, err
	}
	var floor sql.NullInt64
	err := db.QueryRowContext(ctx, "SELECT MAX(floor) FROM "+dialect.FloorTable).Scan(&floor)
	if err != nil {
		return 0, fmt.Errorf("fencedsql: reading %s: %w", dialect.FloorTable, err)
	}
	if !floor.Valid || floor.Int64 < 0 {
		return 0, nil
	}
	return uint64(floor.Int64), nil
}

// RaiseTokenFloor raises the token floor of db's database to floor (creating FloorTable
// when missing): from then on the guards refuse every write whose token is below it. A
// floor at or below the current one changes nothing. At a failover, run it on the new
// primary with the lock service's LastToken + 1 before the application writes there.
// Run it on a plain connection (the fenced driver refuses statements naming the floor).
func RaiseTokenFloor(ctx context.Context, db *sql.DB, d dialect.Dialect, floor uint64) error {
	f, err := floorer(d, "RaiseTokenFloor")
	if err != nil {
		return err
	}
	if floor > math.MaxInt64 {
		return configErr("RaiseTokenFloor: floor %d exceeds the largest token a BIGINT column holds", floor)
	}
	for _, s := range f.FloorDDL() {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("fencedsql: RaiseTokenFloor: creating %s: %w", dialect.FloorTable, err)
		}
	}
	q, args := f.RaiseFloorQuery(int64(floor))
	if _, err := db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("fencedsql: RaiseTokenFloor: %w", err)
	}
	return nil
}

// MaxToken returns the highest token db's database has accepted: the largest token
// column value in each of tables (names as fenced_tables gives them, with
// GuardSpec.TokenColumn when not the default), and the floor − 1 when that is higher.
// With no tables it reads every table of the registry (RegisterTables). Raise a new lock
// service's floor to at least this value before the application uses it. It reads every
// row of every table (no index on the token column): run it at a switch, not in a loop.
func MaxToken(ctx context.Context, db *sql.DB, d dialect.Dialect, tables ...GuardSpec) (uint64, error) {
	if d == nil {
		return 0, configErr("MaxToken: no dialect")
	}
	if len(tables) == 0 {
		rows, err := db.QueryContext(ctx, registryRowsQuery)
		if err != nil {
			return 0, fmt.Errorf("fencedsql: MaxToken: reading %s (name the tables instead): %w", dialect.RegistryTable, err)
		}
		for rows.Next() {
			var s GuardSpec
			if err := rows.Scan(&s.Table, &s.TokenColumn, &s.VersionColumn); err != nil {
				rows.Close()
				return 0, fmt.Errorf("fencedsql: MaxToken: %w", err)
			}
			tables = append(tables, s)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("fencedsql: MaxToken: %w", err)
		}
	}
	var max uint64
	if _, ok := d.(dialect.Floorer); ok {
		floor, err := TokenFloor(ctx, db, d)
		if err != nil && !isMissingTable(d, err) {
			return 0, err
		}
		if floor > 0 {
			max = floor - 1
		}
	}
	for _, s := range tables {
		if s.TokenColumn == "" {
			s.TokenColumn = DefaultTokenColumn
		}
		if s.VersionColumn == "" {
			s.VersionColumn = DefaultVersionColumn
		}
		t, problem := s.parse()
		if problem != "" {
			return 0, configErr("MaxToken: table %q: %s", s.Table, problem)
		}
		var v sql.NullInt64
		q := "SELECT MAX(" + d.QuoteIdent(s.TokenColumn) + ") FROM " + t.Quote(d.QuoteIdent)
		if err := db.QueryRowContext(ctx, q).Scan(&v); err != nil {
			return 0, fmt.Errorf("fencedsql: MaxToken %s: %w", s.Table, err)
		}
		if v.Valid && v.Int64 > 0 && uint64(v.Int64) > max {
			max = uint64(v.Int64)
		}
	}
	return max, nil
}

// isMissingTable reports whether err says the floor table does not exist (no guard
// installed yet): the registry's test answers that for any table.
func isMissingTable(d dialect.Dialect, err error) bool {
	r, ok := d.(dialect.Registrar)
	return ok && r.NoRegistry(err)
}
