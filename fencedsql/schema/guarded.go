package schema

import (
	"context"
	"fmt"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// What the database records as guarded (docs/design.md, G13: nothing fails open). Two
// records, read the same way by every fenced pool at its first connection and by
// MaxToken:
//
//   - the registries (dialect.Registrar): every fencedsql_registry of the database, not
//     only the first the session's search_path finds (PostgreSQL), so a second registry
//     earlier on the path, made by another installer, cannot hide the first;
//   - the guard's own triggers (dialect.GuardFinder): a table that carries them is
//     guarded, whatever the registry and the pool's fenced_tables say — a registered
//     table renamed by a migration (its triggers move with it), a table whose guard was
//     installed without registering it, one named with a typo in fenced_tables.
//
// A table found only by its triggers is guarded with the default fencing columns; when
// it has others, the lazy check before its first guarded write refuses it (ErrSchema:
// register it, with its columns). Listing the guarded tables is fail-closed: a table
// guarded by mistake is refused, never written unfenced.

// RegistryError is a registry that exists but cannot be read, or one the session
// cannot see. Problem and Fix are for the operator; Err is the database's error, if any.
type RegistryError struct {
	Problem string
	Fix     string
	Err     error
}

func (e *RegistryError) Error() string {
	msg := "fencedsql: " + e.Problem
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Fix != "" {
		msg += "; fix: " + e.Fix
	}
	return msg
}

func (e *RegistryError) Unwrap() error { return e.Err }

// ReadRegistries returns the rows of every registry of guarded tables the database
// holds (nil when the dialect keeps none or the database has none). A table recorded
// twice with different columns is a RegistryError: the pool cannot know which columns
// the guard checks. An unreadable registry is a RegistryError too: it is never taken
// for none.
func ReadRegistries(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect) ([]GuardSpec, error) {
	r, ok := d.(dialect.Registrar)
	if !ok || d == nil {
		return nil, nil
	}
	rows, err := q(ctx, r.RegistryExistsQuery())
	if err != nil {
		return nil, &RegistryError{Problem: "the registry check query failed", Err: err}
	}
	var names []string
	for _, row := range rows {
		if len(row) == 0 {
			continue
		}
		switch v := row[0]; {
		case strings.HasPrefix(v, dialect.RegistryElsewhere):
			return nil, &RegistryError{
				Problem: "the registry of guarded tables is in " + strings.TrimPrefix(v, dialect.RegistryElsewhere) + ", which this session does not see (its search_path leaves it out): the tables it records would go unguarded",
				Fix:     "add that schema to the application role's search_path (or the DSN's), or register the tables where the session sees them"}
		case dialect.CatalogBool(v):
			names = append(names, dialect.RegistryTable)
		case v == "" || v == "0":
		default:
			names = append(names, v) // a qualified registry the dialect named
		}
	}
	var specs []GuardSpec
	seen := map[string]GuardSpec{}
	for _, name := range names {
		rows, err := q(ctx, dialect.RegistryRowsQueryOf(name))
		if err != nil {
			if r.NoRegistry(err) {
				continue
			}
			return nil, &RegistryError{Problem: "reading the registry of guarded tables " + name + " failed",
				Fix: "grant the application SELECT on it (and USAGE on its schema)", Err: err}
		}
		for _, row := range rows {
			if len(row) < 3 {
				continue
			}
			s := GuardSpec{Table: row[0], TokenColumn: row[1], VersionColumn: row[2]}
			key := strings.ToLower(s.Table)
			if prev, ok := seen[key]; ok {
				p, n := prev.withDefaults(), s.withDefaults()
				if !strings.EqualFold(p.TokenColumn, n.TokenColumn) || !strings.EqualFold(p.VersionColumn, n.VersionColumn) {
					return nil, &RegistryError{
						Problem: fmt.Sprintf("two registries of guarded tables record %s with different columns (%s, %s and %s, %s)", s.Table, p.TokenColumn, p.VersionColumn, n.TokenColumn, n.VersionColumn),
						Fix:     "register the table again with its columns (fencedsql-schema -apply) and drop the stale registry"}
				}
				continue
			}
			seen[key] = s
			specs = append(specs, s)
		}
	}
	return specs, nil
}

// TriggerGuarded returns the tables of the database that carry the guard's triggers
// (dialect.GuardFinder; nil when the dialect cannot list them). Where the catalog shows
// a table's triggers only to who may change them (MySQL/MariaDB: the TRIGGER privilege),
// a least-privilege application sees none, and the registry is the record.
func TriggerGuarded(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect) ([]dialect.TableName, error) {
	f, ok := d.(dialect.GuardFinder)
	if !ok || d == nil {
		return nil, nil
	}
	rows, err := q(ctx, f.GuardedTablesQuery())
	if err != nil {
		return nil, err
	}
	var out []dialect.TableName
	for _, row := range rows {
		if len(row) == 2 && row[1] != "" {
			out = append(out, dialect.TableName{Schema: row[0], Name: row[1]})
		}
	}
	return out, nil
}

// Guarded returns every table the database records as guarded: the registries' rows,
// then each table carrying the guard's triggers that no registry row names (with the
// default columns, unqualified: a guard matches its name in every schema).
func Guarded(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect) ([]GuardSpec, error) {
	specs, err := ReadRegistries(ctx, q, d)
	if err != nil {
		return nil, err
	}
	tables, err := TriggerGuarded(ctx, q, d)
	if err != nil {
		return nil, &RegistryError{Problem: "the query for the tables carrying the guard's triggers failed", Err: err}
	}
	named := map[string]bool{}
	for _, s := range specs {
		named[strings.ToLower(lastPart(s.Table))] = true
	}
	for _, t := range tables {
		if named[strings.ToLower(t.Name)] {
			continue
		}
		named[strings.ToLower(t.Name)] = true
		specs = append(specs, GuardSpec{Table: t.Name})
	}
	return specs, nil
}

// lastPart is the table name of a registry row (which may name a schema).
func lastPart(table string) string {
	if i := strings.LastIndexByte(table, '.'); i >= 0 {
		return table[i+1:]
	}
	return table
}
