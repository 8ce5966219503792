package sqlite

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardTriggerPrefixes are the name prefixes of the triggers the guard (BEFORE UPDATE,
// BEFORE INSERT) and the tombstone guard (BEFORE INSERT, UPDATE; AFTER DELETE, INSERT,
// UPDATE) install, each followed by the table's name; the BEFORE triggers' first.
var guardTriggerPrefixes = []string{"fencedsql_guard_", "fencedsql_floor_", "fencedsql_tombrep_", "fencedsql_tombmov_", "fencedsql_tombdel_", "fencedsql_tombins_", "fencedsql_tombkey_"}

// beforePrefixes is how many of guardTriggerPrefixes name BEFORE triggers.
const beforePrefixes = 4

// guardTriggerTable returns the table name a trigger of one of the guard's names was
// installed for — the name after the prefix (ALTER TABLE … RENAME TO keeps a table's
// triggers and their names, so it may differ from the table's name now) — and whether
// it is one of the BEFORE triggers (the guard's, the floor's, and the tombstone
// guard's two that record a row a REPLACE deletes).
func guardTriggerTable(trigger string) (name string, before bool, ok bool) {
	lower := foldName(trigger)
	for k, p := range guardTriggerPrefixes {
		if strings.HasPrefix(lower, p) && len(trigger) > len(p) {
			return trigger[len(p):], k < beforePrefixes, true
		}
	}
	return "", false, false
}

// triggerShape splits a CREATE TRIGGER statement of the guard's form into its timing
// and event (between the name and ON) and everything from FOR EACH ROW on, leaving out
// the names of the trigger and the table, which SQLite rewrites when the table is
// renamed.
func triggerShape(sql string) (timing, rest string, ok bool) {
	s, ok := strings.CutPrefix(sql, "CREATE TRIGGER ")
	if !ok {
		return "", "", false
	}
	_, s, ok = strings.Cut(s, " ")
	if !ok {
		return "", "", false
	}
	timing, s, ok = strings.Cut(s, " ON ")
	if !ok {
		return "", "", false
	}
	i := strings.Index(s, " FOR EACH ROW")
	if i < 0 {
		return "", "", false
	}
	return timing, s[i:], true
}

// ownTriggerShapes returns the triggers the guard and the tombstone guard install on a
// table called name, by trigger name (foldName): each one's shape (triggerShape) and
// the statements that re-create it on t's table. The tombstone's only when the table
// has a primary key (key), for its unique indexes as they are (unique).
func (d dialectImpl) ownTriggerShapes(t dialect.SideDoorTable, key []dialect.KeyColumn, unique []dialect.UniqueIndex, name string) map[string][3]string {
	own := map[string][3]string{}
	if t.TokenColumn == "" {
		return own
	}
	table := dialect.TableName{Schema: t.Table.Schema, Name: name}
	var ddl []string
	if t.VersionColumn != "" {
		ddl = d.GuardDDL(table, t.TokenColumn, t.VersionColumn)
	}
	if len(key) > 0 {
		ddl = append(ddl, d.TombstoneUniqueDDL(table, key, unique, t.TokenColumn)...)
	}
	for i, q := range ddl {
		if i == 0 || !strings.HasPrefix(ddl[i-1], "DROP TRIGGER IF EXISTS ") {
			continue
		}
		timing, rest, ok := triggerShape(q)
		if !ok {
			continue
		}
		for _, p := range guardTriggerPrefixes {
			// TombstoneDDL leaves "main" out of the names, GuardDDL writes it.
			named := func(schema string) bool {
				return strings.HasPrefix(q, "CREATE TRIGGER "+(dialect.TableName{Schema: schema, Name: p + name}).Quote(d.QuoteIdent)+" ")
			}
			if named(table.Schema) || table.Schema == "main" && named("") {
				own[foldName(p+name)] = [3]string{timing + rest, ddl[i-1], q}
			}
		}
	}
	return own
}

// guardTriggers finds the triggers on t that carry the name of one the guard or the
// tombstone guard installs but not the text this version writes for it (a WHEN 0, an
// emptied body keeping the version comment: any connection can re-create a SQLite
// trigger), which GuardInstalledQuery and TombstoneInstalledQuery, judging names and
// markers, do not see. ownTriggers leaves the BEFORE triggers' names to this check; a
// trigger merely named fencedsql_… is judged there like any other (red-team rt20g F1,
// F4). The trigger's and the table's names are not compared (a renamed table keeps its
// triggers). The table's primary key, which the tombstone triggers' text holds, is
// read from the catalog (the lazy check is not told it). A BEFORE trigger of one of
// the names that this version would not install there (a table without a primary
// key, or without a version column) is a door too: ownTriggers does not judge it.
// Fix: re-create the trigger as this version writes it (another table's, under the
// name the table had, or one this version would not install: drop it; the guard's Fix
// installs t's own).
func (d dialectImpl) guardTriggers(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	if t.TokenColumn == "" {
		return nil, nil
	}
	rows, err := query(ctx, "SELECT name, sql FROM "+d.master(t.Table.Schema)+" WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE ORDER BY name", t.Table.Name)
	if err != nil {
		return nil, err
	}
	var key []dialect.KeyColumn
	var unique []dialect.UniqueIndex
	for _, r := range rows {
		if len(r) > 0 && strings.HasPrefix(foldName(r[0]), "fencedsql_tomb") {
			if _, key, err = dialect.PrimaryKeyColumns(ctx, query, d, t.Table); err != nil {
				return nil, err
			}
			if len(key) > 0 {
				if unique, err = dialect.UniqueIndexes(ctx, query, d, t.Table); err != nil {
					return nil, err
				}
			}
			break
		}
	}
	shapes := map[string]map[string][3]string{}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 2 {
			continue
		}
		name, before, ok := guardTriggerTable(r[0])
		if !ok {
			continue
		}
		own, seen := shapes[foldName(name)]
		if !seen {
			own = d.ownTriggerShapes(t, key, unique, name)
			shapes[foldName(name)] = own
		}
		want, ok := own[foldName(r[0])]
		// The REPLACE triggers are compared with the text written for the unique
		// indexes they name (uniqueMarker): one installed before a unique index was
		// created is stale, not forged — TombstoneInstalledQuery reports it, and the
		// lazy check, which does not require the tombstone guard, does not refuse it.
		cmp := want
		if k := foldName(r[0]); ok && (strings.HasPrefix(k, "fencedsql_tombrep_") || strings.HasPrefix(k, "fencedsql_tombmov_")) {
			if named, readable := parseUniqueMarker(r[1]); readable {
				cmp = d.ownTriggerShapes(t, key, named, name)[k]
			}
		}
		if !ok && !before {
			// An AFTER trigger this version would not install here (no primary key):
			// ownTriggers judges its text like any other trigger's (one that writes
			// the table or uses RAISE(IGNORE) is a door there).
			continue
		}
		// Identifiers and keywords compare without case (red-team rt21a F7).
		if timing, rest, same := triggerShape(r[1]); ok && same && sameName(timing+rest, cmp[0]) {
			continue
		}
		trg := dialect.TableName{Schema: t.Table.Schema, Name: r[0]}
		fix := []string{"DROP TRIGGER IF EXISTS " + trg.Quote(d.QuoteIdent)}
		if ok && sameName(name, t.Table.Name) {
			fix = []string{want[1], want[2]}
		}
		problem := "the trigger " + r[0] + " on " + t.Table.String() + " carries the name of one of fencedsql's guard triggers but not the text this version installs: " +
			"a changed guard may let through what it should refuse (a token lowered, a deleted key re-inserted); re-create it (fencedsql-schema -apply)"
		if !strings.Contains(r[1], guardVersion) && !strings.Contains(r[1], tombVersion) {
			// No marker of this version: an earlier version's guard (or one changed).
			problem = "the trigger " + r[0] + " on " + t.Table.String() + " is not the one this version of fencedsql installs (it lacks the marker \"" + guardVersion + "\" or \"" + tombVersion + "\"): " +
				"installed by an earlier version, or changed since; an earlier guard refuses less than this version's: re-create it (fencedsql-schema -apply)"
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: r[0] + " on " + t.Table.String(),
			Problem: problem, Fix: fix})
	}
	return doors, nil
}

// master is the sqlite_master of schema (an attached database, or the main one).
func (d dialectImpl) master(schema string) string {
	if schema == "" {
		return "sqlite_master"
	}
	return d.QuoteIdent(schema) + ".sqlite_master"
}
