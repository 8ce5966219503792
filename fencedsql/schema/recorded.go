package schema

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// recordedTable is one table the database records as guarded: Table as the record
// names it (a registry row's name, qualified or not; a trigger-found table by its exact
// catalog schema and name), Spec with its columns (the registry's, or for a table found
// by its triggers alone those its guard text names, else the defaults).
type recordedTable struct {
	Table dialect.TableName
	Spec  GuardSpec
	// TriggerOnly is set for a table found by its triggers alone: no registry row
	// records its columns (MaxToken judges its guard, defaultColumnsGuard).
	TriggerOnly bool
}

// recordedTables returns every table the database records as guarded, for MaxToken and
// for Check without a table list: every row of every registry (none merged with another
// by its name: red-team rt40c F1), then every table carrying the guard's triggers that no
// registry row names — a row naming it qualified, or unqualified in the registry of its
// schema (MySQL/MariaDB, SQLite: the connection's one registry, whose database the
// trigger query searches) — by its schema and its exact name, never by its bare name,
// which the caller's search_path would resolve. It fails when either record cannot be
// read, and on a registry row whose name is not a table name.
func recordedTables(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect) ([]recordedTable, error) {
	rows, err := registryRows(ctx, q, d)
	if err != nil {
		return nil, err
	}
	triggered, err := triggerGuarded(ctx, q, d)
	if err != nil {
		return nil, &RegistryError{Problem: "the query for the tables carrying the guard's triggers failed", Err: err}
	}
	var out []recordedTable
	seen := map[GuardSpec]bool{}
	type named struct {
		home string
		t    dialect.TableName
	}
	var registered []named
	for _, row := range rows {
		s := row.Spec.withDefaults()
		t, problem := s.parse()
		if problem != "" {
			return nil, configErr("the registry of guarded tables records %q: %s", s.Table, problem)
		}
		registered = append(registered, named{row.Home, t})
		if seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, recordedTable{Table: t, Spec: s})
	}
	for _, t := range triggered {
		covered := false
		for _, r := range registered {
			if registryNames(d.Syntax(), r.home, r.t, t.TableName) {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		out = append(out, recordedTable{Table: t.TableName, Spec: t.Spec(true), TriggerOnly: true})
	}
	return out, nil
}

// Recorded returns every table the database records as guarded (the registries' rows
// with their columns; the tables carrying the guard's triggers that no registry row
// names, schema-qualified, on the columns their guard text names, else the defaults), each table a record names apart
// even when another schema's table has its name. It fails when a record cannot be read.
func Recorded(ctx context.Context, db *sql.DB, d dialect.Dialect) ([]GuardSpec, error) {
	if err := complete("Recorded", d); err != nil {
		return nil, err
	}
	recs, err := recordedTables(ctx, catalogQuery(db), d)
	if err != nil {
		return nil, fmt.Errorf("fencedsql: reading the tables the database records as guarded: %w", err)
	}
	out := make([]GuardSpec, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Spec)
	}
	return out, nil
}

// Unlisted returns the tables the database records as guarded (Recorded) that none of
// tables names — a recorded name matches a listed one of the same name (without case)
// when either is unqualified or both name the same schema. fencedsql-schema checks and
// reports them, so that a -tables list that leaves out a table every fenced pool
// guards does not pass it over in silence (red-team rt40b F1).
func Unlisted(ctx context.Context, db *sql.DB, d dialect.Dialect, tables ...GuardSpec) ([]GuardSpec, error) {
	recorded, err := Recorded(ctx, db, d)
	if err != nil {
		return nil, err
	}
	var listed []dialect.TableName
	for _, s := range tables {
		if t, err := dialect.ParseTableName(s.Table); err == nil {
			listed = append(listed, t)
		}
	}
	var out []GuardSpec
	for _, r := range recorded {
		t, err := dialect.ParseTableName(r.Table)
		if err != nil {
			out = append(out, r) // Check names its problem
			continue
		}
		named := false
		for _, l := range listed {
			if dialect.SameRecordedName(d.Syntax(), l.Name, t.Name) && (l.Schema == "" || t.Schema == "" || dialect.SameRecordedName(d.Syntax(), l.Schema, t.Schema)) {
				named = true
				break
			}
		}
		if !named {
			out = append(out, r)
		}
	}
	return out, nil
}
