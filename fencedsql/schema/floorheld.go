package schema

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// FloorUnheld reports whether writes to table escape a token floor in force: the
// database's installed guards read a floor in the connection's scope
// (dialect.FloorFinder's GuardFloorsQuery lists one), but table carries no guard that
// reads it (floorHeld). The floor is enforced only by the guards' triggers; the
// wrapper's rewrite compares a token with the row's, never with the floor, so such a
// table takes tokens below the floor — after an asynchronous failover lost its guard's
// installation with the tail, a stale holder's token below the floor the failover hook
// raised writes it (docs/design.md G14, red-team rt54c F1). A fenced pool's lazy check
// refuses such a table (ErrSchema); in a database without a floor (no guard reads one)
// wrapper-only fencing stays allowed. A dialect without a Guarder or a FloorFinder has
// no floor: false. An error is a catalog query's: the answer is unknown.
//
// It costs one catalog query for a table whose guard is installed (GuardInstalledQuery),
// at most three for one whose guard is not.
func FloorUnheld(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect, table dialect.TableName) (bool, error) {
	ff, ok := d.(dialect.FloorFinder)
	if !ok {
		return false, nil
	}
	held, err := floorHeld(ctx, q, d, table)
	if err != nil || held {
		return false, err
	}
	query, args := ff.GuardFloorsQuery()
	rows, err := q(ctx, query, args...)
	if err != nil {
		return false, err
	}
	for _, r := range rows {
		if len(r) >= 2 && dialect.CatalogBool(r[1]) { // a floor in the connection's scope
			return true, nil
		}
	}
	return false, nil
}

// floorHeld reports whether table carries a guard that holds its writes to the token
// floor: its guard of this version is installed (Guarder.GuardInstalledQuery, which on
// every dialect requires the floor read), or, on a dialect that can tell the floor's
// coverage apart from the guard's version (dialect.FloorCoverageFinder: PostgreSQL, an
// older guard that reads the floor, or a guard whose floor's copy is not on the
// session's search_path), the table itself is not among the relations its
// UnflooredQuery lists; on the others (MySQL/MariaDB, SQLite), the table carries a
// trigger of the guard (dialect.GuardFinder), whatever its name. A dialect without a
// Guarder holds nothing.
func floorHeld(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect, table dialect.TableName) (bool, error) {
	g, ok := d.(dialect.Guarder)
	if !ok {
		return false, nil
	}
	query, args := g.GuardInstalledQuery(table)
	rows, err := q(ctx, query, args...)
	if err != nil {
		return false, err
	}
	if len(rows) > 0 && len(rows[0]) > 0 && dialect.CatalogBool(rows[0][0]) {
		return true, nil
	}
	cf, ok := d.(dialect.FloorCoverageFinder)
	if !ok {
		// MySQL/MariaDB, SQLite: a table that still carries triggers of the guard
		// (renamed with its table: GuardInstalledQuery looks for the new name's) is
		// judged by the side-door check (a guard lost its floor part: FloorPartDoor);
		// only a table carrying none is taken for unheld here.
		triggered, err := triggerGuarded(ctx, q, d)
		if err != nil {
			return false, err
		}
		for _, t := range triggered {
			if strings.EqualFold(t.Name, table.Name) && (table.Schema == "" || strings.EqualFold(t.Schema, table.Schema)) {
				return true, nil
			}
		}
		return false, nil
	}
	query, args = cf.UnflooredQuery(table)
	if rows, err = q(ctx, query, args...); err != nil {
		return false, err
	}
	for _, r := range rows {
		// The table itself (its descendants are judged by the side-door check).
		if len(r) >= 2 && strings.EqualFold(r[1], table.Name) && (table.Schema == "" || strings.EqualFold(r[0], table.Schema)) {
			return false, nil
		}
	}
	return true, nil
}
