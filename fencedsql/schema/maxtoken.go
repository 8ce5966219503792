package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// MaxToken returns the highest token db's database has accepted: the largest token
// column value in each of tables (names as fenced_tables gives them, with
// GuardSpec.TokenColumn when not the default), and the floor − 1 when that is higher
// (the highest of the floors the installed guards read, TokenFloors; none when no guard
// reads one), and the highest token a tombstone keeps (dialect.TombstoneLister: a key
// deleted under the highest token leaves it nowhere else). With no tables it reads every table the database records as guarded
// (Guarded: the registries, RegisterTables, and the tables carrying the guard's
// triggers). Raise a new lock service's floor to at least this value before the
// application uses it. It reads every row of every table (no index on the token
// column): run it at a switch, not in a loop.
func MaxToken(ctx context.Context, db *sql.DB, d dialect.Dialect, tables ...GuardSpec) (uint64, error) {
	if d == nil {
		return 0, configErr("MaxToken: no dialect")
	}
	if len(tables) == 0 {
		var err error
		if tables, err = Guarded(ctx, catalogQuery(db), d); err != nil {
			return 0, fmt.Errorf("fencedsql: MaxToken: reading the registry of guarded tables (name the tables instead): %w", err)
		}
		if len(tables) == 0 {
			return 0, configErr("MaxToken: the database records no guarded table (no registry, no guard installed): name the tables")
		}
	}
	var max uint64
	if _, ok := d.(dialect.FloorFinder); ok {
		floors, err := TokenFloors(ctx, db, d)
		if err != nil && !isMissingTable(d, err) && !errors.Is(err, ErrNoFloorGuard) {
			return 0, err
		}
		for _, f := range floors {
			if f.Floor > 0 && f.Floor-1 > max {
				max = f.Floor - 1
			}
		}
	}
	tombs, err := tombstoneMax(ctx, db, d)
	if err != nil {
		return 0, err
	}
	if tombs > max {
		max = tombs
	}
	for _, s := range tables {
		s = s.withDefaults()
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

// tombstoneMax is the highest token in the database's tombstone tables (0 when the
// dialect cannot list them or there are none).
func tombstoneMax(ctx context.Context, db *sql.DB, d dialect.Dialect) (uint64, error) {
	l, ok := d.(dialect.TombstoneLister)
	if !ok {
		return 0, nil
	}
	rows, err := catalogQuery(db)(ctx, l.TombstoneTablesQuery())
	if err != nil {
		return 0, fmt.Errorf("fencedsql: MaxToken: listing the tombstone tables: %w", err)
	}
	var max uint64
	for _, r := range rows {
		if len(r) != 2 {
			continue
		}
		t := dialect.TableName{Schema: r[0], Name: r[1]}
		var v sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT MAX(fence_token) FROM "+t.Quote(d.QuoteIdent)).Scan(&v); err != nil {
			return 0, fmt.Errorf("fencedsql: MaxToken: tombstones %s: %w", t.String(), err)
		}
		if v.Valid && v.Int64 > 0 && uint64(v.Int64) > max {
			max = uint64(v.Int64)
		}
	}
	return max, nil
}
