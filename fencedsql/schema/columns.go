package schema

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ColumnVerdict is the one answer to "is this table fit for fencing, and what fixes
// it", as far as its columns go: the lazy check before the first guarded write and
// Check both use it (Check adds the database-side guard).
type ColumnVerdict struct {
	// Exists: the table is visible; HasToken, HasVersion: it has the fencing columns;
	// TokenNotNull, VersionNotNull: they are NOT NULL.
	Exists, HasToken, HasVersion, TokenNotNull, VersionNotNull bool
	// NotTable: the name is not a table (a view, materialized view, foreign table,
	// sequence, virtual table…): its problem says so, nothing else is judged, and no
	// statement fixes it.
	NotTable bool

	Problems []string // in words; empty when the columns are fit
	Fix      []string // DDL statements, in order: add missing columns, then make nullable ones NOT NULL
}

// OK reports whether the columns are fit for fencing.
func (v ColumnVerdict) OK() bool { return len(v.Problems) == 0 }

// Columns runs d's column query for table through query and judges the answer
// (judgeColumns). An error is the query's: the answer is unknown.
func Columns(ctx context.Context, query dialect.CatalogQuery, d dialect.Dialect, table dialect.TableName, tokCol, verCol string) (ColumnVerdict, error) {
	if err := complete("Columns", d); err != nil {
		return ColumnVerdict{}, err
	}
	q, args := d.ColumnsQuery(table)
	rows, err := query(ctx, q, args...)
	if err != nil {
		return ColumnVerdict{}, err
	}
	return judgeColumns(d, table, tokCol, verCol, rows), nil
}

// notTableKinds are the notes (dialect.Dialect.ColumnsQuery) of a relation that is
// not a table, other than a view, with why it cannot be guarded and what to do.
var notTableKinds = map[string]string{
	"foreign table":  "its rows live in a table on the remote server, which a write not sent through this foreign table changes unfenced, and the database enforces none of the foreign table's NOT NULL constraints (the fencing relies on them) nor runs the guard's triggers there; guard the remote table on its own server instead",
	"sequence":       "it holds no rows a fenced write can change; list only tables in fenced_tables",
	"virtual table":  "its rows are its module's (FTS5, R*Tree, …), which have no NOT NULL fencing columns and fire no triggers, and no ALTER TABLE runs on it; it cannot be guarded: list only ordinary tables in fenced_tables",
	"index":          "it holds no rows a fenced write can change; list the table it indexes instead",
	"composite type": "it holds no rows a fenced write can change; list only tables in fenced_tables",
	"system view":    "its rows are the server's; list only tables in fenced_tables",
}

// judgeColumns judges the rows of d's column query, (column name, not-null flag[, note]):
// column names match exactly where the dialect's quoted names are exact
// (dialect.ExactIdenter: the wrapper quotes the configured names, so "Fence_Token"
// is not fence_token there), else case-insensitively; the flag means NOT NULL when it is 1,
// true or t in any case (notNullFlag). No rows: no such table.
//
// A fenced write relies on the NOT NULL violation of the fencing columns (G1, G2 in
// docs/design.md), so both columns must exist and be NOT NULL. Every problem is named,
// with the statements that fix them: GuardColumnsDDL for the missing columns, then
// NotNullFixer's statements per nullable column; where the dialect has none, the
// problem says to rebuild the table.
//
// A row's optional third value, the note (dialect.Dialect.ColumnsQuery), reports what
// no flag can: a view (every row's note "view", or "view:" and the tables it reads)
// is refused as such, whatever its columns, with no fix — the rows live in the
// tables behind it, which a guard on the view would leave unfenced, and no ALTER
// TABLE runs on a view (red-team rt31d F4, F5); so is any other relation that is not
// a table, its note naming its kind (notTableKinds: a foreign table, whose rows live
// on the remote server, which fails open, red-team rt33a F4; a sequence, a virtual
// table, an index or a composite type, which were reported as tables missing columns,
// with an ALTER TABLE that cannot run, rt33a F7, F8); a generated fencing column ("generated")
// is refused as generated, not as missing or nullable: the fenced writes set it, which
// the database refuses, and no ADD COLUMN of a column that exists can run (rt31d F6).
func judgeColumns(d dialect.Dialect, table dialect.TableName, tokCol, verCol string, rows [][]string) ColumnVerdict {
	var v ColumnVerdict
	exact := false
	if e, ok := d.(dialect.ExactIdenter); ok {
		exact = e.ExactQuotedIdents()
	}
	// An exact spelling wins over one that differs in case (two columns may differ
	// only in case where quoted names are exact); a dialect that folds the case of
	// quoted names takes either.
	tokExact, verExact := false, false
	var viewOf, kind string
	generated := map[string]bool{}
	for _, row := range rows {
		if len(row) < 2 {
			continue
		}
		v.Exists = true
		nn := dialect.CatalogBool(row[1])
		if len(row) > 2 {
			switch note := row[2]; {
			case note == "view" || strings.HasPrefix(note, "view:"):
				v.NotTable, viewOf = true, strings.TrimPrefix(strings.TrimPrefix(note, "view"), ":")
			case notTableKinds[note] != "":
				v.NotTable, kind = true, note
			case note == "generated":
				generated[row[0]] = true
				continue // judged below, as generated
			}
		}
		switch {
		case row[0] == tokCol:
			v.HasToken, v.TokenNotNull, tokExact = true, nn, true
		case row[0] == verCol:
			v.HasVersion, v.VersionNotNull, verExact = true, nn, true
		case exact:
		case strings.EqualFold(row[0], tokCol) && !tokExact:
			v.HasToken, v.TokenNotNull = true, nn
		case strings.EqualFold(row[0], verCol) && !verExact:
			v.HasVersion, v.VersionNotNull = true, nn
		}
	}
	if !v.Exists {
		v.Problems = append(v.Problems, "no such table (or it is not visible to this connection)")
		return v
	}
	if kind != "" {
		article := "a "
		if strings.ContainsRune("aeiou", rune(kind[0])) {
			article = "an "
		}
		v.Problems = append(v.Problems, table.String()+" is "+article+kind+", not a table: "+notTableKinds[kind])
		return v
	}
	if v.NotTable {
		p := table.String() + " is a view, not a table: the rows live in the table(s) it reads, which a guard on the view leaves unfenced (a write to them is not fenced), and the fenced writes, keys and triggers are built for a table; guard the table that holds its rows"
		if viewOf = strings.TrimSpace(viewOf); viewOf != "" {
			p += " (" + viewOf + ")"
		}
		p += " instead"
		v.Problems = append(v.Problems, p)
		return v
	}
	tokGen := !v.HasToken && isGenerated(generated, tokCol, exact)
	verGen := !v.HasVersion && isGenerated(generated, verCol, exact)
	for _, c := range []struct {
		gen bool
		col string
	}{{tokGen, tokCol}, {verGen, verCol}} {
		if c.gen {
			v.Problems = append(v.Problems, "column "+c.col+" is a generated column: the fenced writes set it, which the database refuses; make it a plain column (BIGINT NOT NULL DEFAULT 0; where the database cannot change a column, rebuild the table)")
		}
	}
	v.HasToken, v.HasVersion = v.HasToken || tokGen, v.HasVersion || verGen
	if !v.HasToken {
		v.Problems = append(v.Problems, "missing column "+tokCol+" (BIGINT NOT NULL DEFAULT 0)")
	}
	if !v.HasVersion {
		v.Problems = append(v.Problems, "missing column "+verCol+" (BIGINT NOT NULL DEFAULT 0)")
	}
	if !v.HasToken || !v.HasVersion {
		v.Fix = append(v.Fix, d.GuardColumnsDDL(table, tokCol, verCol, !v.HasToken, !v.HasVersion)...)
	}
	for _, c := range []struct {
		nullable bool
		col      string
	}{{v.HasToken && !v.TokenNotNull && !tokGen, tokCol}, {v.HasVersion && !v.VersionNotNull && !verGen, verCol}} {
		if !c.nullable {
			continue
		}
		var fix []string
		if f, ok := d.(dialect.NotNullFixer); ok {
			fix = f.NotNullDDL(table, c.col)
		}
		p := "column " + c.col + " is nullable: it must be NOT NULL (a fenced write relies on the NOT NULL violation)"
		if len(fix) == 0 {
			p += "; this database cannot change an existing column: rebuild the table with " + c.col + " BIGINT NOT NULL DEFAULT 0"
		} else {
			p += "; rows holding NULL in it must be set (e.g. to 0) first"
		}
		v.Problems = append(v.Problems, p)
		v.Fix = append(v.Fix, fix...)
	}
	return v
}

// isGenerated reports whether the note of column col said "generated" (generated is
// keyed by the column names the query returned; case-insensitively unless exact).
func isGenerated(generated map[string]bool, col string, exact bool) bool {
	if generated[col] {
		return true
	}
	if exact {
		return false
	}
	for name := range generated {
		if strings.EqualFold(name, col) {
			return true
		}
	}
	return false
}
