package fencedsql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// A guarded table's lazy check (verifyTable) is trusted for WithSchemaRecheck's
// interval, so a migration on another connection that renames or drops a fencing
// column, drops a guard object (a tombstone table, the token floor) or drops the table
// makes the pool's next guarded writes fail on the database with "no such column" or
// "no such table" (PostgreSQL 42703/42P01, MySQL 1054/1146). That failure is the
// schema check's answer come early, and is reported as such: schemaGone turns it into
// a *SchemaError (errors.Is ErrSchema; the driver's error stays reachable) and drops
// the table's cached verdict, so the next guarded write runs the lazy check again and
// is refused with its own *SchemaError and fix (red-team rt50d F3). Only the failure
// path pays: nothing is sent or checked on the way to the database.

// schemaGone returns the *SchemaError for err, the failure of a guarded write of g on
// a name the database does not have (info, dialect.ErrorUnknownName), when that name
// is one of g's fencing columns, g itself or a guard object ("fencedsql_…"); nil when
// it is another name (the caller's own, which stays the driver's error).
func (k *core) schemaGone(g *plan.Table, info dialect.ErrorInfo, err error) error {
	var what string
	switch {
	case info.Column != "":
		col := lastPart(info.Column)
		if !dialect.SameColumnName(k.dialect, col, g.TokenCol) && !dialect.SameColumnName(k.dialect, col, g.VerCol) {
			return nil
		}
		what = "its fencing column " + col + " is gone"
	case info.Table != "":
		t := lastPart(info.Table)
		switch {
		case strings.EqualFold(t, g.Name):
			what = "the table is gone"
		case len(t) >= len(guardNamePrefix) && strings.EqualFold(t[:len(guardNamePrefix)], guardNamePrefix):
			what = "its guard object " + t + " is gone"
		default:
			return nil
		}
	default:
		return nil
	}
	k.checked.Delete(g)
	return &SchemaError{
		Table:   g.String(),
		Problem: "the write failed: " + what + " (the schema changed since the lazy check, on another connection; the next guarded write checks the table again)",
		Fix:     "restore it, or run schema.Check on the table and apply its fix",
		Err:     err,
	}
}

// definerGone returns the *SchemaError for err, the failure of a guarded write of g
// because an object it fired runs as a DEFINER account that does not exist
// (dialect.ErrorDefinerGone: MySQL/MariaDB 1449, whose message names the account;
// red-team rt57b F4), and drops the table's cached verdict: the next guarded write
// runs the lazy check again, which names the object where this connection may read
// the server's accounts. The guards' own triggers and recorder are such objects
// (schema.Check reports them, with the statements that re-create them); a user's
// trigger on the table is too, and its fix is the user's.
func (k *core) definerGone(g *plan.Table, err error) error {
	k.checked.Delete(g)
	return &SchemaError{
		Table:   g.String(),
		Problem: "the write failed: a trigger or routine it fires runs as a DEFINER account that does not exist (dropped, or a dump restored on a server without it), so every such write fails, the current holder's too",
		Fix:     "run schema.Check on the table and apply its fix, which re-creates the guard's objects as an existing account (or create the account again)",
		Err:     err,
	}
}

// goneOrErr returns schemaGone's *SchemaError for err, the failure of a statement
// preparing a guarded write of g (stmt.prepareAll), when the dialect classifies it as
// an unknown name that is g's; else err.
func (k *core) goneOrErr(g *plan.Table, err error) error {
	if g == nil {
		return err
	}
	if info := k.dialect.Classify(err); info.Kind == dialect.ErrorUnknownName {
		if se := k.schemaGone(g, info, err); se != nil {
			return se
		}
	}
	return err
}

// guardNamePrefix starts the name of every object the guards create (dialect package
// documentation).
const guardNamePrefix = "fencedsql_"

// lastPart returns name without its qualifiers (the part after its last '.').
func lastPart(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}
