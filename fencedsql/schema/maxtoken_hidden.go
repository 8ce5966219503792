package schema

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// hiddenGuardsMax is, for a dialect.HiddenGuardReader (MySQL/MariaDB), the highest
// token kept where the catalog's listings may not show the running account (red-team
// rt42c F4): the floor − 1 of the connection database's floor table and the highest
// token of each target's own tombstone table, each read by name. A table that does not
// exist adds nothing (nor does the floor table of a connection without a current
// database); one the account may not read fails with a *MaxTokenPrivilegeError.
//
// recordedNoGuard is set when MaxToken lists the tables itself (none named) and the
// floor listing found no guard that reads a floor: when the floor table exists there
// the guards were installed, and an account that sees none of their triggers (no
// TRIGGER privilege) would also miss every table guarded without a registry row — a
// *MaxTokenPrivilegeError naming TRIGGER. With tables named the triggers are not
// needed: the floor and the tombstones are read by name.
func hiddenGuardsMax(ctx context.Context, tx *sql.Tx, d dialect.Dialect, targets []tokenTarget, recordedNoGuard bool) (uint64, error) {
	h, ok := d.(dialect.HiddenGuardReader)
	if !ok {
		return 0, nil
	}
	var top uint64
	own := dialect.TableName{Name: dialect.FloorTable}
	f, _, err := readFloor(ctx, tx, d, own)
	floorExists := false
	switch {
	case err == nil:
		floorExists = true
		if f > 0 {
			top = f - 1
		}
	case h.Denied(err):
		return 0, &MaxTokenPrivilegeError{Object: own.String(), Privilege: "SELECT", Err: err}
	case isMissingTable(d, err) || noDatabase(d, err):
	default:
		return 0, fmt.Errorf("fencedsql: MaxToken: %w", err)
	}
	for _, t := range targets {
		tomb := h.TombstoneTableOf(t.table)
		var v sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT MAX(fence_token) FROM "+tomb.Quote(d.QuoteIdent)).Scan(&v)
		switch {
		case err == nil:
			if v.Valid && v.Int64 > 0 {
				top = max(top, uint64(v.Int64))
			}
		case h.Denied(err):
			return 0, &MaxTokenPrivilegeError{Object: tomb.String() + " (the tombstones of " + t.table.String() + ")", Privilege: "SELECT", Err: err}
		case isMissingTable(d, err):
		default:
			return 0, fmt.Errorf("fencedsql: MaxToken: tombstones %s: %w", tomb, err)
		}
	}
	if recordedNoGuard && floorExists {
		return 0, &MaxTokenPrivilegeError{Privilege: "TRIGGER",
			Object: "the guards' triggers (the database has a floor table, so guards were installed, but the account sees none: a table guarded without a registry row would be missed; if the guards were removed, name the tables)"}
	}
	return top, nil
}

// denied reports whether err is a refused privilege, where the dialect can tell
// (dialect.HiddenGuardReader).
func denied(d dialect.Dialect, err error) bool {
	h, ok := d.(dialect.HiddenGuardReader)
	return ok && h.Denied(err)
}

// noDatabase reports whether err says the connection has no current database
// (dialect.NoDatabaseReporter).
func noDatabase(d dialect.Dialect, err error) bool {
	n, ok := d.(dialect.NoDatabaseReporter)
	return ok && n.NoDatabase(err)
}

// MaxTokenColumnsError means MaxToken, listing the tables itself, found a table
// guarded by its triggers alone (no registry row records its columns) whose guard is
// not the one this release installs for the default columns: the guard may fence
// another token column, and reading fence_token — which may be an ordinary column of
// the table — could answer below a token the table accepted (red-team rt42c F2).
// Problems are the dialect's findings (the lazy check's, dialect.TriggerDoorFinder).
// Register the table with its columns (RegisterTables, fencedsql-schema -apply) or
// name it with its token column (-tables … -token-column …).
type MaxTokenColumnsError struct {
	Table    string
	Problems []string
}

func (e *MaxTokenColumnsError) Error() string {
	return "fencedsql: MaxToken: " + e.Table + " is guarded by its triggers alone (no registry row records its columns) and its guard is not the one installed for the default columns " +
		DefaultTokenColumn + ", " + DefaultVersionColumn + ", so the column it fences is unknown; register it with its columns (fencedsql-schema -apply with -token-column) or name it (-tables " +
		e.Table + " -token-column …): " + strings.Join(e.Problems, "; ")
}

// defaultColumnsGuard checks that the guard of r, a table found by its triggers alone,
// is the guard of the default columns, by the dialect's own judgement of the guard's
// triggers (dialect.TriggerDoorFinder, the lazy check's: a guard installed for other
// columns differs from the text this release installs for the defaults), and fails
// with a *MaxTokenColumnsError when it finds anything: MaxToken cannot tell which
// column such a guard fences. A dialect without the finder is not checked.
func defaultColumnsGuard(ctx context.Context, tx *sql.Tx, d dialect.Dialect, r recordedTable) error {
	f, ok := d.(dialect.TriggerDoorFinder)
	if !ok {
		return nil
	}
	doors, err := f.TriggerDoors(ctx, catalogQuery(tx), dialect.SideDoorTable{Table: r.Table, TokenColumn: DefaultTokenColumn, VersionColumn: DefaultVersionColumn})
	if err != nil {
		return fmt.Errorf("fencedsql: MaxToken %s: judging the guard of a table found by its triggers: %w", r.Spec.Table, err)
	}
	var problems []string
	for _, sd := range doors {
		if !sd.Note {
			problems = append(problems, string(sd.Kind)+" "+sd.Object+": "+sd.Problem)
		}
	}
	if len(problems) > 0 {
		return &MaxTokenColumnsError{Table: r.Spec.Table, Problems: problems}
	}
	return nil
}
