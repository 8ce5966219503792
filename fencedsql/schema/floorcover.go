package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The floor's coverage (docs/design.md, G14: "The floor covers every guarded table").
// The token floor is enforced only by the guards' triggers: the wrapper's own rewrite
// compares a token with the row's, never with the floor. A table the database records
// as guarded whose writes no floor-reading guard judges — registered but fenced by the
// wrapper alone, a PostgreSQL inheritance child created after the guard, a MariaDB
// guard that lost its floor trigger — takes tokens below the floor, so a raise or a
// floor report that says the floor is in force would be wrong there (red-team rt34b
// F1). RaiseTokenFloor and TokenFloor(s) therefore name those tables
// (ErrFloorUncovered) instead of reporting success. The check reads the catalog only
// when they run: nothing is added to a fenced statement.

// unfloored returns the tables whose INSERTs and UPDATEs no installed guard holds to
// the token floor, though the database records them (or a table whose rows they hold)
// as guarded: every table of Guarded's two records — the registries' rows and the
// tables carrying the guard's triggers — that carries no floor-reading guard, and
// (dialect.FloorCoverageFinder) their descendants that carry none; each only when it
// is a table with both fencing columns NOT NULL, which a fenced pool writes (one
// without them is refused by the pool's lazy check, ErrSchema, so no fenced write
// lands there: an application role's table carrying a trigger of the guard's name
// does not fail the raise, red-team rt25a). Their names are qualified as the catalog
// spells them where it does, sorted, each once.
//
// On a dialect judged by GuardInstalledQuery (no dialect.FloorCoverageFinder:
// MySQL/MariaDB, SQLite), a guard's triggers read the floor table of their own table's
// schema (database). A table named with a schema qualifier whose floor table is not
// among held — the floor tables the caller raised or read — is not held to the floor
// it reports, however installed its guard (red-team rt37c F3: a MySQL registry of
// database home naming shop.accounts, whose guard reads shop's floor; a SQLite
// registry naming a table of an ATTACHed database, whose floor the tools never raise).
// Such a table is named even when the catalog does not show it to the running account
// (its columns unseen): coverage not known is not coverage.
//
// A registry the connection cannot see (PostgreSQL: outside the search_path) or name
// (MySQL/MariaDB: a DSN without a database) is left out: its tables are judged by
// their triggers alone. A catalog query that fails fails the call: coverage not known
// is not coverage.
func unfloored(ctx context.Context, db querier, d dialect.Dialect, held []dialect.TableName) ([]string, error) {
	g, ok := d.(dialect.Guarder)
	if !ok {
		return nil, nil
	}
	q := catalogQuery(db)
	var specs []GuardSpec
	registered, err := ReadRegistries(ctx, q, d)
	if err != nil {
		var re *RegistryError
		if !errors.As(err, &re) || re.Err != nil && !re.Config {
			return nil, err
		}
	}
	specs = append(specs, registered...)
	triggered, err := triggerGuarded(ctx, q, d)
	if err != nil {
		return nil, fmt.Errorf("listing the tables carrying the guard's triggers: %w", err)
	}
	for _, t := range triggered {
		specs = append(specs, GuardSpec{Table: t.String()})
	}
	found := map[string]bool{}
	var out []string
	// unseen: count the table when the catalog does not show it (a table of a schema
	// whose floor is not held, which the running account may not see: whether a fenced
	// pool writes it cannot be told, so it is not taken for covered).
	add := func(t dialect.TableName, spec GuardSpec, unseen bool) error {
		k := strings.ToLower(t.String())
		if found[k] {
			return nil
		}
		v, err := Columns(ctx, q, d, t, spec.TokenColumn, spec.VersionColumn)
		if err != nil {
			return fmt.Errorf("%s: the column query failed: %w", t, err)
		}
		if v.Exists && !v.NotTable && v.HasToken && v.HasVersion && v.TokenNotNull && v.VersionNotNull || !v.Exists && unseen {
			found[k] = true
			out = append(out, t.String())
		}
		return nil
	}
	heldIn := map[string]bool{}
	for _, t := range held {
		heldIn[dialect.SchemaKey(d, t.Schema)] = true
	}
	cf, byQuery := d.(dialect.FloorCoverageFinder)
	for _, spec := range specs {
		spec = spec.withDefaults()
		table, problem := spec.parse()
		if problem != "" {
			continue // a registry row no pool can guard: the pool refuses it
		}
		if byQuery {
			query, args := cf.UnflooredQuery(table)
			rows, err := q(ctx, query, args...)
			if err != nil {
				return nil, fmt.Errorf("%s: the floor coverage query failed: %w", spec.Table, err)
			}
			for _, r := range rows {
				if len(r) < 2 {
					continue
				}
				if err := add(dialect.CatalogName(r[0], r[1]), spec, false); err != nil {
					return nil, err
				}
			}
			continue
		}
		query, args := g.GuardInstalledQuery(table)
		var installed sql.NullString
		if err := db.QueryRowContext(ctx, query, args...).Scan(&installed); err != nil && err != sql.ErrNoRows {
			return nil, fmt.Errorf("%s: the guard query failed: %w", spec.Table, err)
		}
		held := table.Schema == "" || heldIn[dialect.SchemaKey(d, table.Schema)]
		if held && dialect.CatalogBool(installed.String) {
			continue
		}
		if err := add(table, spec, !held); err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return out, nil
}

// floorCovered is nil when every table the database records as guarded is held to
// the floor tables held (the ones the caller raised or read: unfloored finds none),
// else a *FloorError (ErrFloorUncovered) naming the tables that are not; raised says
// whether the caller raised the floor first.
func floorCovered(ctx context.Context, db querier, d dialect.Dialect, op string, raised bool, held []dialect.TableName) error {
	tables, err := unfloored(ctx, db, d, held)
	if err != nil {
		if raised {
			return fmt.Errorf("fencedsql: %s: the floor is raised for the tables the guards judge, but whether every guarded table is held to it could not be checked (run it again): %w", op, err)
		}
		return fmt.Errorf("fencedsql: %s: checking that every guarded table is held to the floor: %w", op, err)
	}
	if len(tables) > 0 {
		return &FloorError{Op: op, Uncovered: tables, Raised: raised}
	}
	return nil
}

// registrySchemas returns the schemas the registries' tables are qualified with
// (RegisterTables: "shop.accounts"), as spelled there. On MySQL/MariaDB such a table
// may live in a database other than the connection's, and its guards read that
// database's floor table (a trigger reads its own database's tables): the floor tools
// raise and read it too (guardFloors takes in the out-of-scope floor tables of these
// schemas), since the application's registry lists the table as one its pool writes
// (red-team rt37c F3). Elsewhere every schema is in scope (PostgreSQL) or the dialect
// does not list it (SQLite's attached databases: unfloored names their tables). An
// unreadable registry yields none: unfloored reads it again and fails the call then.
func registrySchemas(ctx context.Context, db querier, d dialect.Dialect) map[string]bool {
	specs, _ := ReadRegistries(ctx, catalogQuery(db), d)
	out := map[string]bool{}
	for _, spec := range specs {
		if t, problem := spec.withDefaults().parse(); problem == "" && t.Schema != "" {
			out[dialect.SchemaKey(d, t.Schema)] = true
		}
	}
	return out
}
