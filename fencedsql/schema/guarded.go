package schema

import (
	"context"
	"errors"
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
// A table found only by its triggers is guarded on the columns its guard trigger
// checks, read from the trigger's text by the same query (GuardFinder.GuardColumns;
// the defaults when the text names none). A pool listing it, or a registry row naming
// it, with other columns fails at its first connection, whatever the schema check says
// (red-team rt55c F1). Listing the guarded tables is fail-closed: a table
// guarded by mistake is refused, never written unfenced.

// RegistryError is a registry that exists but cannot be read, or one the session
// cannot see. Problem and Fix are for the operator; Err is the database's error, if any.
// Config is set when the cause is the pool's configuration, not the database: a
// connection without a current database, whose registry cannot be named
// (dialect.NoDatabaseReporter).
type RegistryError struct {
	Problem string
	Fix     string
	Err     error
	Config  bool
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
	if err := complete("ReadRegistries", d); err != nil {
		return nil, err
	}
	rows, err := registryRows(ctx, q, d)
	if err != nil {
		return nil, err
	}
	return mergeRegistries(d.Syntax(), rows)
}

// mergeRegistries is ReadRegistries' answer from the rows of every registry: two rows
// naming one table as the server keeps its name (recordKey) are one.
func mergeRegistries(syn dialect.Syntax, rows []registryRow) ([]GuardSpec, error) {
	var specs []GuardSpec
	seen := map[string]GuardSpec{}
	for _, row := range rows {
		s := row.Spec
		key := recordKey(syn, s.Table)
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
	return specs, nil
}

// registryRow is one row of one registry: Home is the schema that holds the registry
// (unquoted; "" for the connection's own: MySQL/MariaDB, SQLite).
type registryRow struct {
	Home string
	Spec GuardSpec
}

// registryRows returns every row of every registry of the database, each with the
// schema of the registry holding it, none merged: MaxToken and Check read each table a
// row names, whatever another row of another schema names (red-team rt40c F1).
func registryRows(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect) ([]registryRow, error) {
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
	var out []registryRow
	for _, name := range names {
		rows, err := q(ctx, dialect.RegistryRowsQueryOf(name))
		if err != nil {
			if nd, ok := d.(dialect.NoDatabaseReporter); ok && nd.NoDatabase(err) {
				return nil, &RegistryError{Config: true, Err: err,
					Problem: "the connection has no current database (the DSN names none), and the registry of guarded tables is the connection database's: it cannot be read, and the tables it records would go unguarded",
					Fix:     "name the database whose registry records the guarded tables in the DSN (user:password@tcp(host)/dbname); statements may still qualify tables with other databases"}
			}
			if r.NoRegistry(err) {
				continue
			}
			return nil, &RegistryError{Problem: "reading the registry of guarded tables " + name + " failed",
				Fix: "grant the application SELECT on it (and USAGE on its schema)", Err: err}
		}
		home := registryHome(name)
		for _, row := range rows {
			if len(row) < 3 {
				continue
			}
			out = append(out, registryRow{Home: home, Spec: GuardSpec{Table: row[0], TokenColumn: row[1], VersionColumn: row[2]}})
		}
	}
	return out, nil
}

// registryHome is the schema of a registry named as Registrar.RegistryExistsQuery
// names it ("" when unqualified), its double quotes undone.
func registryHome(name string) string {
	schema, ok := strings.CutSuffix(name, "."+dialect.RegistryTable)
	if !ok {
		return ""
	}
	if len(schema) >= 2 && schema[0] == '"' && schema[len(schema)-1] == '"' {
		schema = strings.ReplaceAll(schema[1:len(schema)-1], `""`, `"`)
	}
	return schema
}

// Records is what the database records as guarded, each record apart: the pool checks
// both against its configuration and against each other (one table recorded with two
// sets of columns fails the pool, docs/design.md G13).
type Records struct {
	// Registered holds the registries' rows, with their columns.
	Registered []GuardSpec
	// Triggered holds the tables carrying the guard's triggers, each with the columns
	// its guard checks.
	Triggered []TriggerRecord
	// rows are the registries' rows, each with its registry's schema (registryNames).
	rows []registryRow
	// syn is the dialect's syntax: names compare as its server keeps them
	// (dialect.SameRecordedName).
	syn dialect.Syntax
}

// TriggerRecord is a table carrying the guard's triggers (dialect.GuardFinder), with
// the fencing columns its guard trigger checks as the database keeps its text
// (GuardFinder.GuardColumns); both empty when the text names none (tombstone triggers
// only, a text this version did not write).
type TriggerRecord struct {
	dialect.TableName
	TokenColumn, VersionColumn string
}

// Spec is the record as a guard: the table qualified when qualified (its schema or
// database, as the catalog names it), on the guard's columns or, when they could not
// be read, the defaults.
func (t TriggerRecord) Spec(qualified bool) GuardSpec {
	name := t.Name
	if qualified && t.Schema != "" {
		name = t.Schema + "." + t.Name
	}
	return GuardSpec{Table: name, TokenColumn: orDefaultColumn(t.TokenColumn, DefaultTokenColumn), VersionColumn: orDefaultColumn(t.VersionColumn, DefaultVersionColumn)}
}

func orDefaultColumn(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// ReadRecords reads both records through q. Each is read whatever the other's fate
// (with the schema check off, a pool logs a failed read of one and still obeys the
// other): the error joins a *RegistryError per record that failed, and Records holds
// what was read.
func ReadRecords(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect) (Records, error) {
	if err := complete("ReadRecords", d); err != nil {
		return Records{}, err
	}
	rows, rerr := registryRows(ctx, q, d)
	var registered []GuardSpec
	if rerr == nil {
		registered, rerr = mergeRegistries(d.Syntax(), rows)
	}
	triggered, terr := triggerGuarded(ctx, q, d)
	if terr != nil {
		terr = &RegistryError{Problem: "the query for the tables carrying the guard's triggers failed", Err: terr}
	}
	return Records{Registered: registered, Triggered: triggered, rows: rows, syn: d.Syntax()}, errors.Join(rerr, terr)
}

// TriggerOnly returns, on the columns their guard checks (Spec), the tables carrying
// the guard's triggers that no registry row names (registryNames: by its schema and
// name, or by its name in its registry's schema) and for which known (nil: none) is
// false, each under its name alone (a guard matches its name in every schema), or
// qualified when a registry row, another trigger record or known names another table
// of that name (known
// reports a table another record of the caller names, and whether one of that name).
func (r Records) TriggerOnly(known func(TriggerRecord) (same, namesake bool)) []GuardSpec {
	names := map[string]int{}
	for _, t := range r.Triggered {
		names[recordKey(r.syn, t.Name)]++
	}
	var out []GuardSpec
	for _, t := range r.Triggered {
		if r.Registers(t) {
			continue
		}
		namesake := names[recordKey(r.syn, t.Name)] > 1
		if known != nil {
			var same bool
			if same, namesake = known(t); same {
				continue
			}
		}
		for _, row := range r.rows {
			namesake = namesake || dialect.SameRecordedName(r.syn, lastPart(row.Spec.Table), t.Name)
		}
		if namesake && t.Schema != "" && !dialect.PlainIdent(t.Schema) {
			// A schema a guard cannot name (a space, a quote): the table is taken by
			// its name alone, as a guard matches its name in every schema, and that
			// name is already guarded by the namesake.
			continue
		}
		out = append(out, t.Spec(namesake))
	}
	return out
}

// Registers returns whether a registry row names t's table (registryNames), and the
// first such row's columns.
func (r Records) Registers(t TriggerRecord) bool {
	_, ok := r.RegistryRow(t)
	return ok
}

// RegistryRow returns the registry row naming t's table (registryNames), if any.
func (r Records) RegistryRow(t TriggerRecord) (GuardSpec, bool) {
	for _, row := range r.rows {
		if n, err := dialect.ParseTableName(row.Spec.Table); err == nil && registryNames(r.syn, row.Home, n, t.TableName) {
			return row.Spec.withDefaults(), true
		}
	}
	return GuardSpec{}, false
}

// registryNames reports whether a registry row naming n, in the registry of the schema
// home ("" for the connection's one registry: MySQL/MariaDB, SQLite), names the table
// t found by its triggers: the same name and the same schema, or, unqualified, the
// registry's own schema (or the connection's one), each compared as the server of syn
// keeps it, case folded (dialect.SameRecordedName: a row recording a PostgreSQL name
// longer than 63 bytes as the application writes it names the table the catalog
// records under its first 63, red-team rt56a F3). MaxToken, Check and a pool's first
// connection read the records by this one rule.
func registryNames(syn dialect.Syntax, home string, n, t dialect.TableName) bool {
	if !dialect.SameRecordedName(syn, n.Name, t.Name) {
		return false
	}
	if n.Schema != "" {
		return dialect.SameRecordedName(syn, n.Schema, t.Schema)
	}
	return home == "" || dialect.SameRecordedName(syn, home, t.Schema)
}

// recordKey is the key of a table name (qualified or not) among the records: each
// part as the server of syn keeps it, lower-cased.
func recordKey(syn dialect.Syntax, table string) string {
	if t, err := dialect.ParseTableName(table); err == nil {
		if t.Schema != "" {
			return strings.ToLower(dialect.KeptName(syn, t.Schema) + "." + dialect.KeptName(syn, t.Name))
		}
		return strings.ToLower(dialect.KeptName(syn, t.Name))
	}
	return strings.ToLower(table)
}

// Guarded returns every table the database records as guarded: the registries' rows,
// then each table carrying the guard's triggers that no registry row names. Unlike a
// pool, it fails when either record cannot be read.
func Guarded(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect) ([]GuardSpec, error) {
	r, err := ReadRecords(ctx, q, d)
	if err != nil {
		return nil, err
	}
	return append(r.Registered, r.TriggerOnly(nil)...), nil
}

// triggerGuarded returns the tables of the database that carry the guard's triggers
// (dialect.GuardFinder; nil when the dialect cannot list them), each with the columns
// its guard checks. Where the catalog shows a table's triggers only to who may change
// them (MySQL/MariaDB: the TRIGGER privilege), a least-privilege application sees none,
// and the registry is the record.
func triggerGuarded(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect) ([]TriggerRecord, error) {
	f, ok := d.(dialect.GuardFinder)
	if !ok || d == nil {
		return nil, nil
	}
	rows, err := q(ctx, f.GuardedTablesQuery())
	if err != nil {
		return nil, err
	}
	var out []TriggerRecord
	for _, row := range rows {
		if len(row) < 2 || row[1] == "" {
			continue
		}
		t := TriggerRecord{TableName: dialect.CatalogName(row[0], row[1])}
		if len(row) >= 3 {
			if tok, ver, ok := f.GuardColumns(row[2]); ok {
				t.TokenColumn, t.VersionColumn = tok, ver
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// lastPart is the table name of a registry row (which may name a schema).
func lastPart(table string) string {
	if i := strings.LastIndexByte(table, '.'); i >= 0 {
		return table[i+1:]
	}
	return table
}
