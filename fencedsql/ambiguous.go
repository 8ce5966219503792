package fencedsql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// ambiguous refuses a guarded write through a derived guard (plan.Table.Root: a
// reference the configured qualifiers do not decide — unqualified, or written with
// another qualifier) when the configured guards sharing its name do not all fence the
// same columns, compared as the dialect compares column names
// (dialect.SameColumnName: exactly on PostgreSQL) (two tables of one name in two schemas or databases, listed or
// registered with other columns). The planner derives such a guard from the first
// guard of the name, whatever table the reference resolves to, so the write could be
// fenced on another table's columns: a column the resolved table also has, but that
// the holders writing it through the qualified name do not fence (red-team rt24b F4).
// It returns a *SchemaError (ErrSchema) naming the guards and their columns, nil
// otherwise. It runs whatever WithSchemaCheck says: it sends nothing.
func (k *core) ambiguous(g *plan.Table) error {
	if g == nil || g.Root == nil {
		return nil
	}
	key := k.rw.Key(g.Root.Name)
	var named []string
	differ := false
	for _, t := range k.rw.Tables() {
		if k.rw.Key(t.Name) != key {
			continue
		}
		named = append(named, t.String()+" ("+t.TokenCol+", "+t.VerCol+")")
		if !dialect.SameColumnName(k.dialect, t.TokenCol, g.Root.TokenCol) || !dialect.SameColumnName(k.dialect, t.VerCol, g.Root.VerCol) {
			differ = true
		}
	}
	if !differ {
		return nil
	}
	return &SchemaError{Table: g.String(),
		Problem: "the name is guarded as " + strings.Join(named, " and ") + ", with different fencing columns, and this reference is not written with the qualifier of one of them: the wrapper cannot tell which columns fence the table it resolves to",
		Fix:     "write the table qualified as one of the guards (the one whose columns fence it), or guard the tables of this name with the same columns"}
}
