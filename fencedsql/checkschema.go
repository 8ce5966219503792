package fencedsql

import (
	"context"
	"database/sql"
	"fmt"
)

// TableReport is what CheckSchema found for one guarded table.
type TableReport struct {
	Table string
	// Exists: the table is visible to the connection. HasToken, HasVersion: it has the
	// fencing columns; TokenNotNull, VersionNotNull: they are NOT NULL. Guarded: the
	// dialect's database-side guard (Guarder) is installed on it.
	Exists, HasToken, HasVersion, TokenNotNull, VersionNotNull, Guarded bool
	// Tombstoned: the tombstone guard (Tombstoner, G9) is installed on it, and
	// PrimaryKey its primary key columns. Only CheckTombstones fills them in.
	Tombstoned bool
	PrimaryKey []string

	Problems []string // human-readable, empty when the table is fit
	Fix      []string // DDL statements that fix every problem, in order (add columns, set NOT NULL, install guard)
}

// OK reports whether the table is fit for fencing, database-side guard included.
func (r TableReport) OK() bool { return len(r.Problems) == 0 }

// CheckSchema inspects the named tables (GuardSpec gives custom column names; plain
// names use the defaults) with d's catalog queries on a plain *sql.DB.
//
// For each table it reports whether it exists, has both fencing columns NOT NULL, and
// carries the database-side guard, with the problems in words and the DDL that fixes
// them, in order: add missing columns (d.GuardColumnsDDL), make nullable ones NOT NULL
// (when the dialect implements NotNullFixer; SQLite cannot alter a column and gets no
// statement for that), install the guard (Guarder.GuardDDL). The columns are judged
// exactly as the lazy check before the first guarded write judges them (same problems,
// same statements); only the guard is CheckSchema's own (fenced writes do not need it). A dialect that does not implement Guarder gets the problem "no
// database-side guard available for this dialect" and no statement for it. A missing
// table gets no fix.
//
// Run the Fix statements through a plain (non-fenced) connection, one Exec each (in
// one transaction where the database has transactional DDL: PostgreSQL, SQLite): the
// fenced driver refuses multi-statement strings that mention a guarded table, and
// trigger bodies contain semicolons. The command fencedsql/cmd/fencedsql-schema does
// this. CheckSchema itself only reads the catalog and also works on a fenced *sql.DB.
//
// CheckSchema does not look at the tombstone guard (G9, no resurrection of a deleted
// row); CheckTombstones is CheckSchema plus that check, and the command
// fencedsql-schema uses it.
//
// A catalog query that fails makes CheckSchema return the reports so far and an error
// wrapping the driver's error (not ErrSchema: the answer is unknown, not "unfit"). A
// table name or column name that is not a plain identifier (letters, digits, _, $) is a
// *ConfigError.
func CheckSchema(ctx context.Context, db *sql.DB, d Dialect, tables ...GuardSpec) ([]TableReport, error) {
	if d == nil {
		return nil, configErr("CheckSchema: no dialect")
	}
	reports := make([]TableReport, 0, len(tables))
	for _, spec := range tables {
		r, err := checkTable(ctx, db, d, spec)
		if err != nil {
			return reports, err
		}
		reports = append(reports, r)
	}
	return reports, nil
}

func checkTable(ctx context.Context, db *sql.DB, d Dialect, spec GuardSpec) (TableReport, error) {
	if spec.TokenColumn == "" {
		spec.TokenColumn = DefaultTokenColumn
	}
	if spec.VersionColumn == "" {
		spec.VersionColumn = DefaultVersionColumn
	}
	tokCol, verCol := spec.TokenColumn, spec.VersionColumn
	r := TableReport{Table: spec.Table}
	table, problem := spec.parse()
	if problem != "" {
		return r, configErr("CheckSchema: table %q: %s", spec.Table, problem)
	}

	// 1. and 2.: missing and nullable columns, judged as the lazy check judges them.
	v, err := inspectColumns(ctx, dbQueryStrings(db), d, table, tokCol, verCol)
	if err != nil {
		return r, fmt.Errorf("fencedsql: CheckSchema %s: the column query failed: %w", spec.Table, err)
	}
	r.Exists, r.HasToken, r.HasVersion = v.exists, v.hasToken, v.hasVersion
	r.TokenNotNull, r.VersionNotNull = v.tokenNotNull, v.versionNotNull
	r.Problems, r.Fix = v.problems, v.fix
	if !r.Exists {
		return r, nil
	}
	// 3. The database-side guard.
	g, ok := d.(Guarder)
	if !ok {
		r.Problems = append(r.Problems, "no database-side guard available for this dialect")
		return r, nil
	}
	q, args := g.GuardInstalledQuery(table)
	var installed sql.NullString
	switch err := db.QueryRowContext(ctx, q, args...).Scan(&installed); {
	case err == sql.ErrNoRows:
	case err != nil:
		return r, fmt.Errorf("fencedsql: CheckSchema %s: the guard query failed: %w", spec.Table, err)
	}
	r.Guarded = notNullFlag(installed.String)
	if !r.Guarded {
		r.Problems = append(r.Problems, "no database-side guard installed: writes that bypass the wrapper are not refused by the database")
		r.Fix = append(r.Fix, g.GuardDDL(table, tokCol, verCol)...)
	}
	return r, nil
}

// dbQueryStrings runs catalog queries on db for inspectColumns, rendering values as
// the lazy check's queryStrings does.
func dbQueryStrings(db *sql.DB) queryFunc {
	return func(ctx context.Context, q string, args []any) ([][]string, error) {
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return nil, err
		}
		var out [][]string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return nil, err
			}
			row := make([]string, len(cols))
			for i, v := range vals {
				row[i] = valueString(v)
			}
			out = append(out, row)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		return out, rows.Err()
	}
}
