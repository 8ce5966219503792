package fencedsql

import (
	"fmt"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// triggerGuards returns the guards a pool adds, at its first connection, for the
// tables the database records as guarded by their triggers alone (schema.Records:
// read by the records query, with the columns each guard trigger checks), and fails
// when one is recorded or listed with other columns than its guard checks — whatever
// the schema check says: a pool fencing another token column than the installed guard
// checks lets a stale write through it (red-team rt55c F1). One rule for both records
// and the listing, as addGuards compares the registry's rows with the listing: a
// registry row names a trigger-guarded table by its schema and name, or by its name in
// its registry's schema (schema.Records.RegistryRow); a listed name by its name, and
// its schema if it gives one (sameGuardedTable). A table whose guard text names no
// columns (tombstone triggers only, a guard of another version) is taken on the
// defaults, as before, and judged by the lazy check. listed holds the listed names,
// lower case.
func (k *core) triggerGuards(rec schema.Records, listed map[string]bool) ([]schema.GuardSpec, error) {
	for _, t := range rec.Triggered {
		if t.TokenColumn == "" {
			continue
		}
		ts := t.Spec(true)
		if row, ok := rec.RegistryRow(t); ok && !sameColumns(k.dialect, row, ts) {
			return nil, &SchemaError{Table: ts.Table, Problem: fmt.Sprintf("the registry of guarded tables records the columns %s and %s (%s), but the guard's triggers on the table check %s and %s", row.TokenColumn, row.VersionColumn, row.Table, ts.TokenColumn, ts.VersionColumn),
				Fix: "install the guard again for the registered columns, or register the table again with its guard's columns (fencedsql-schema -apply)"}
		}
		for _, gs := range k.cfg.guards {
			if !listed[strings.ToLower(gs.Table)] || !sameGuardedTable(k.dialect, gs, ts) || sameColumns(k.dialect, gs, ts) {
				continue
			}
			lt, lv := guardColumns(gs)
			return nil, &SchemaError{Table: gs.Table, Problem: fmt.Sprintf("listed with the columns %s and %s, but the guard's triggers on %s check %s and %s", lt, lv, ts.Table, ts.TokenColumn, ts.VersionColumn),
				Fix: "give the guard's columns (fenced_token_column, fenced_version_column, TokenColumn, VersionColumn), or install the guard again for the listed columns (fencedsql-schema -apply)"}
		}
	}
	known := func(t schema.TriggerRecord) (same, namesake bool) {
		ts := t.Spec(true)
		for _, gs := range k.cfg.guards {
			if listed[strings.ToLower(gs.Table)] && sameGuardedTable(k.dialect, gs, ts) {
				return true, false
			}
			if dialect.SameRecordedName(k.dialect.Syntax(), lastName(gs.Table), t.Name) {
				namesake = true
			}
		}
		// A name the planner already guards under another spelling (truncated as
		// the server truncates it, a case twin): qualified, so as not to replace it.
		return false, namesake || k.rw.Lookup([]string{t.Name}) != nil
	}
	return rec.TriggerOnly(known), nil
}

// lastName is the table name of a guard's name (which may name a schema).
func lastName(table string) string {
	return table[strings.LastIndexByte(table, '.')+1:]
}
