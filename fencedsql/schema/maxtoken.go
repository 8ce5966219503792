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
// deleted under the highest token leaves it nowhere else). For a table named with a
// schema (database) qualifier outside the connection's scope (dialect.SchemaTokenLister:
// MySQL/MariaDB, a table of another database), it also reads that schema's floor and
// tombstones, which that table's guards hold to. With no tables it reads every table the database records as guarded
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
		floors, err := tokenFloors(ctx, db, d)
		if err != nil && !isMissingTable(d, err) && !errors.Is(err, ErrNoFloorGuard) {
			return 0, err
		}
		for _, f := range floors {
			if f.Floor > 0 && f.Floor-1 > max {
				max = f.Floor - 1
			}
		}
	}
	l, _ := d.(dialect.TombstoneLister)
	var query string
	if l != nil {
		query = l.TombstoneTablesQuery()
	}
	tombs, err := tombstoneMax(ctx, db, d, query, nil)
	if err != nil {
		return 0, err
	}
	other, err := otherSchemasMax(ctx, db, d, tables)
	if err != nil {
		return 0, err
	}
	for _, v := range []uint64{tombs, other} {
		if v > max {
			max = v
		}
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

// otherSchemasMax is, for a dialect.SchemaTokenLister, the highest token the floor
// (its value − 1) and the tombstone tables of each schema a table of tables is
// qualified with hold (red-team rt31b F4): a MySQL/MariaDB table named
// database-qualified through a connection to another database keeps its tombstones
// and reads its floor in its own database, which the connection's listings do not
// cover. A schema without a floor table adds nothing; reading the connection's own
// database again changes nothing. 0 for other dialects.
func otherSchemasMax(ctx context.Context, db *sql.DB, d dialect.Dialect, tables []GuardSpec) (uint64, error) {
	sl, ok := d.(dialect.SchemaTokenLister)
	if !ok {
		return 0, nil
	}
	seen := map[string]bool{}
	var top uint64
	for _, s := range tables {
		t, problem := s.withDefaults().parse()
		if problem != "" || t.Schema == "" || seen[t.Schema] {
			continue // a bad name is MaxToken's own error
		}
		seen[t.Schema] = true
		f, _, err := readFloor(ctx, db, d, dialect.TableName{Schema: t.Schema, Name: dialect.FloorTable})
		switch {
		case err == nil:
			if f > 0 {
				top = max(top, f-1)
			}
		case !isMissingTable(d, err):
			return 0, fmt.Errorf("fencedsql: MaxToken: %w", err)
		}
		q, args := sl.TombstoneTablesInQuery(t.Schema)
		tombs, err := tombstoneMax(ctx, db, d, q, args)
		if err != nil {
			return 0, err
		}
		top = max(top, tombs)
	}
	return top, nil
}

// tombstoneMax is the highest token in the tombstone tables that query (with args)
// lists, one row each (schema, or "" for the connection's own, table name): 0 when
// query is "" (the dialect cannot list them) or there are none.
func tombstoneMax(ctx context.Context, db *sql.DB, d dialect.Dialect, query string, args []any) (uint64, error) {
	if query == "" {
		return 0, nil
	}
	rows, err := catalogQuery(db)(ctx, query, args...)
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
