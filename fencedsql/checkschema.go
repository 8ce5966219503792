package fencedsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// TableReport is what CheckSchema found for one guarded table.
type TableReport struct {
	Table string
	// Exists: the table is visible to the connection. HasToken, HasVersion: it has the
	// fencing columns; TokenNotNull, VersionNotNull: they are NOT NULL. Guarded: the
	// dialect's database-side guard (Guarder) is installed on it.
	Exists, HasToken, HasVersion, TokenNotNull, VersionNotNull, Guarded bool

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
// (when the dialect has a NotNullDDL(table, column string) []string method; SQLite
// cannot alter a column and gets no statement for that), install the guard
// (Guarder.GuardDDL). A dialect that does not implement Guarder gets the problem "no
// database-side guard available for this dialect" and no statement for it. A missing
// table gets no fix.
//
// Run the Fix statements through a plain (non-fenced) connection, one Exec each (in
// one transaction where the database has transactional DDL: PostgreSQL, SQLite): the
// fenced driver refuses multi-statement strings that mention a guarded table, and
// trigger bodies contain semicolons. The command fencedsql/cmd/fencedsql-schema does
// this. CheckSchema itself only reads the catalog and also works on a fenced *sql.DB.
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

// notNullFixer is the optional dialect method CheckSchema uses for nullable columns.
type notNullFixer interface {
	NotNullDDL(table, column string) []string
}

func checkTable(ctx context.Context, db *sql.DB, d Dialect, spec GuardSpec) (TableReport, error) {
	tokCol, verCol := spec.TokenColumn, spec.VersionColumn
	if tokCol == "" {
		tokCol = DefaultTokenColumn
	}
	if verCol == "" {
		verCol = DefaultVersionColumn
	}
	r := TableReport{Table: spec.Table}
	schema, name, qualified := strings.Cut(spec.Table, ".")
	if !qualified {
		schema, name = "", spec.Table
	}
	for _, id := range []string{schema, name, tokCol, verCol} {
		if !validIdent(id) {
			return r, configErr("CheckSchema: table %q: %q is not a valid identifier", spec.Table, id)
		}
	}
	if name == "" || (qualified && schema == "") || strings.EqualFold(tokCol, verCol) {
		return r, configErr("CheckSchema: table %q: table, token and version column names must be non-empty and distinct", spec.Table)
	}

	q, args := d.ColumnsQuery(schema, name)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return r, fmt.Errorf("fencedsql: CheckSchema %s: the column query failed: %w", spec.Table, err)
	}
	var tokNullable, verNullable bool
	for rows.Next() {
		var col string
		var notNull sql.NullString
		if err := rows.Scan(&col, &notNull); err != nil {
			rows.Close()
			return r, fmt.Errorf("fencedsql: CheckSchema %s: the column query failed: %w", spec.Table, err)
		}
		r.Exists = true
		nn := notNull.String == "1" || strings.EqualFold(notNull.String, "true") || strings.EqualFold(notNull.String, "t")
		switch {
		case strings.EqualFold(col, tokCol):
			r.HasToken, r.TokenNotNull, tokNullable = true, nn, !nn
		case strings.EqualFold(col, verCol):
			r.HasVersion, r.VersionNotNull, verNullable = true, nn, !nn
		}
	}
	if err := rows.Close(); err != nil {
		return r, fmt.Errorf("fencedsql: CheckSchema %s: the column query failed: %w", spec.Table, err)
	}
	if err := rows.Err(); err != nil {
		return r, fmt.Errorf("fencedsql: CheckSchema %s: the column query failed: %w", spec.Table, err)
	}
	if !r.Exists {
		r.Problems = append(r.Problems, "no such table (or it is not visible to this connection)")
		return r, nil
	}

	// 1. Missing columns, one statement each (a dialect may need one per column).
	for _, c := range []struct {
		has      bool
		col      string
		tok, ver bool
	}{{r.HasToken, tokCol, true, false}, {r.HasVersion, verCol, false, true}} {
		if c.has {
			continue
		}
		r.Problems = append(r.Problems, "missing column "+c.col+" (BIGINT NOT NULL DEFAULT 0)")
		r.Fix = append(r.Fix, d.GuardColumnsDDL(spec.Table, tokCol, verCol, c.tok, c.ver))
	}
	// 2. Nullable columns.
	for _, c := range []struct {
		nullable bool
		col      string
	}{{tokNullable, tokCol}, {verNullable, verCol}} {
		if !c.nullable {
			continue
		}
		var fix []string
		if f, ok := d.(notNullFixer); ok {
			fix = f.NotNullDDL(spec.Table, c.col)
		}
		p := "column " + c.col + " is nullable: it must be NOT NULL (a fenced write relies on the NOT NULL violation)"
		if len(fix) == 0 {
			p += "; this database cannot change an existing column: rebuild the table with " + c.col + " BIGINT NOT NULL DEFAULT 0"
		} else {
			p += "; rows holding NULL in it must be set (e.g. to 0) first"
		}
		r.Problems = append(r.Problems, p)
		r.Fix = append(r.Fix, fix...)
	}
	// 3. The database-side guard.
	g, ok := d.(Guarder)
	if !ok {
		r.Problems = append(r.Problems, "no database-side guard available for this dialect")
		return r, nil
	}
	q, args = g.GuardInstalledQuery(schema, name)
	var installed sql.NullString
	switch err := db.QueryRowContext(ctx, q, args...).Scan(&installed); {
	case err == sql.ErrNoRows:
	case err != nil:
		return r, fmt.Errorf("fencedsql: CheckSchema %s: the guard query failed: %w", spec.Table, err)
	}
	r.Guarded = installed.String == "1" || strings.EqualFold(installed.String, "true") || strings.EqualFold(installed.String, "t")
	if !r.Guarded {
		r.Problems = append(r.Problems, "no database-side guard installed: writes that bypass the wrapper are not refused by the database")
		r.Fix = append(r.Fix, g.GuardDDL(spec.Table, tokCol, verCol)...)
	}
	return r, nil
}
