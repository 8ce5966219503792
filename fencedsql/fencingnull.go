package fencedsql

import (
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// fencingCol says which fencing column a NOT NULL violation names.
type fencingCol int

const (
	notFencing fencingCol = iota
	tokenColumn
	versionColumn
)

// fencingNull reads a NOT NULL violation (dialect.ErrorNotNull) as the database's
// refusal of a fenced write: the wrapper's rewrite sets the token (or version) to
// NULL for a row with a newer token, and the guards' triggers raise the same error
// (the tombstone guard for a re-insert of a key deleted under a newer token, the
// guard for a NULL fencing column). It returns the fencing column the violation
// names and its guarded table.
//
// For a statement the wrapper planned for a guarded table (p.Guard), that table's
// columns. For one it could not attribute to a table — dynamic SQL under
// WithDynamicSQL, CALL, a routine, a trigger on another table writing a guarded one:
// p nil or without a guard — the configured guarded tables the error can be of: the
// one the error names (PostgreSQL reports it), or, where the error names no table
// (MySQL/MariaDB's 1048), every guarded table with a fencing column of that name
// (red-team rt55b F1: the tombstone guard's refusal of a dynamic re-insert came back
// as the raw 1048). The table is nil when several fit. A column of no guarded table
// is notFencing: the error is the caller's own.
//
// An error that names no table is read so only for a statement whose writes the
// wrapper cannot attribute: p nil (a statement it did not plan) or p.Dynamic (it runs
// dynamic SQL, CALL, a compound statement, …). For a planned statement that runs no
// dynamic SQL and names no guarded table (p without a guard), the violation is of the
// tables it names, which are unguarded: notFencing, the driver's error as it is
// (red-team rt55e F3: INSERT INTO docs (version) VALUES (NULL) on an unguarded table
// with a column named version came back as ErrFenced naming a guarded table). Left
// open: a trigger or stored function on an unguarded table that writes a guarded one
// then gives MySQL/MariaDB's raw 1048 (docs/design.md, Known open findings).
func (k *core) fencingNull(p *plan.Plan, info dialect.ErrorInfo) (*plan.Table, fencingCol) {
	if p != nil && p.Guard != nil {
		return p.Guard, k.fencingColOf(p.Guard, info.Column)
	}
	if info.Table == "" && p != nil && !p.Dynamic {
		return nil, notFencing
	}
	var found *plan.Table
	col, n := notFencing, 0
	for _, g := range k.rw.Tables() {
		if info.Table != "" && k.rw.Key(info.Table) != k.rw.Key(g.Name) {
			continue
		}
		c := k.fencingColOf(g, info.Column)
		if c == notFencing || col != notFencing && c != col {
			continue
		}
		if found == nil || found.String() != g.String() {
			n++
		}
		found, col = g, c
	}
	if n > 1 {
		found = nil
	}
	return found, col
}

// fencingColOf says which of g's fencing columns col is.
func (k *core) fencingColOf(g *plan.Table, col string) fencingCol {
	switch {
	case dialect.SameColumnName(k.dialect, col, g.TokenCol):
		return tokenColumn
	case dialect.SameColumnName(k.dialect, col, g.VerCol):
		return versionColumn
	}
	return notFencing
}
