package schema

import (
	"context"
	"database/sql"
	"fmt"
	"math"

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

// isMissingTable reports whether err says the floor table does not exist (no guard
// installed yet): the registry's test answers that for any table.
func isMissingTable(d dialect.Dialect, err error) bool {
	r, ok := d.(dialect.Registrar)
	return ok && r.NoRegistry(err)
}
