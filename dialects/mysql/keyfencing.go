package mysql

import (
	"context"
	"sort"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// keyFencingQuery lists, in LintSchema's one catalog query, what lintKeyFencing
// judges: ('key', column, index) for each column of each unique key of the table (the
// column "" for a MySQL 8 functional key part, whose hidden column information_schema
// does not name), and ('generated', column, expression) for each generated column of
// the table (GENERATION_EXPRESSION: MySQL leaves it empty for the others, MariaDB NULL).
// Parameters: token column, version column, schema, table, schema, table. MariaDB
// prints GENERATION_EXPRESSION in the reading session's sql_mode: the statement that
// holds this query starts with noSessionMode (LintSchema; catalogsession.go), so
// exprNames lexes it in the default reading whatever the session's.
const keyFencingQuery = "SELECT CASE WHEN COLUMN_NAME = ? THEN 'key token' WHEN COLUMN_NAME = ? THEN 'key version' ELSE 'key' END, COALESCE(COLUMN_NAME, ''), INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME = ? AND NON_UNIQUE = 0 " +
	"UNION ALL SELECT 'generated', COLUMN_NAME, GENERATION_EXPRESSION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME = ? AND COALESCE(GENERATION_EXPRESSION, '') <> ''"

// functionalKeyQuery reads the expressions of the table's unique functional key parts
// (MySQL 8.0.13+, the only servers that have them and STATISTICS.EXPRESSION): run only
// when keyFencingQuery found one. Parameters: schema, table.
const functionalKeyQuery = "SELECT INDEX_NAME, EXPRESSION FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME = ? AND NON_UNIQUE = 0 AND COLUMN_NAME IS NULL"

// lintKeyFencing reports each fencing column (t's token and version column) that a
// unique key depends on (dialect.KeyFencingColumn; red-team rt59d F1 for the plain key
// columns, rt60b F1 for the other forms), from keyFencingQuery's rows: every fenced
// write sets the column, so such a write moves the row to another key and a stale
// holder's write finds no row instead of failing. A key is a key however the server
// enforces it:
//
//   - the column is a column of the primary key or of a unique index (a long UNIQUE …
//     USING HASH of MariaDB included);
//   - a generated column whose expression names the column (or names another such
//     generated column) is one;
//   - a MySQL 8 functional key part's expression names either (functionalKeyQuery, a
//     second query run only for a table that has such a key; a functional key whose
//     expression the catalog does not show is reported: fail closed).
//
// Names are compared case-folded (MySQL's column names are case-insensitive), and any
// name an expression spells counts (over-reporting rather than parsing it).
func (d dialectImpl) lintKeyFencing(ctx context.Context, query dialect.CatalogQuery, t dialect.LintTable, rows [][]string) ([]dialect.SchemaProblem, error) {
	generated := map[string][]string{} // lower-case generated column → the names its expression spells
	type keyPart struct{ column, index, fencing string }
	var parts []keyPart
	functional := false
	for _, r := range rows {
		switch r[0] {
		case "generated":
			generated[strings.ToLower(r[1])] = exprNames(r[2])
		case "key", "key token", "key version":
			parts = append(parts, keyPart{strings.ToLower(r[1]), r[2], strings.TrimPrefix(r[0], "key")})
			functional = functional || r[1] == ""
		}
	}
	var exprs map[string][][]string // functional key's index → the names of each expression
	if functional {
		fr, err := query(ctx, functionalKeyQuery, t.Table.Schema, t.Table.Name)
		if err != nil {
			return nil, err
		}
		exprs = map[string][][]string{}
		for _, r := range fr {
			if len(r) == 2 {
				exprs[r[0]] = append(exprs[r[0]], exprNames(r[1]))
			}
		}
	}
	var found []dialect.SchemaProblem
	fencing := [2]string{" token", " version"} // keyPart.fencing of each fencing column
	for i, col := range []string{t.TokenColumn, t.VersionColumn} {
		derived := derivedNames(col, generated)
		keys := map[string]string{} // index → its description
		for _, p := range parts {
			if p.fencing == fencing[i] {
				keys[p.index] = p.index // the column itself, as the server names it
				continue
			}
			if p.column != "" {
				if via, ok := derived[p.column]; ok {
					if _, dup := keys[p.index]; !dup || via == "" {
						keys[p.index] = p.index + throughGenerated(via)
					}
				}
				continue
			}
			if _, ok := keys[p.index]; ok {
				continue
			}
			if len(exprs[p.index]) == 0 {
				keys[p.index] = p.index + ", a functional key whose expression the catalog does not show" // fail closed
				continue
			}
			for _, names := range exprs[p.index] {
				if via, ok := namesAny(names, derived); ok {
					keys[p.index] = p.index + ", through a functional key part's expression" + throughGenerated(via)
					break
				}
			}
		}
		list := make([]string, 0, len(keys))
		for _, k := range keys {
			list = append(list, k)
		}
		sort.Strings(list)
		for _, k := range list {
			found = append(found, dialect.SchemaProblem{Problem: dialect.KeyFencingColumn(col, k)})
		}
	}
	return found, nil
}

// derivedNames returns the lower-case names of col and of the generated columns
// computed from it (directly or through another generated column), each mapped to
// the generated column it is ("" for col itself).
func derivedNames(col string, generated map[string][]string) map[string]string {
	derived := map[string]string{strings.ToLower(col): ""}
	for changed := true; changed; {
		changed = false
		for g, names := range generated {
			if _, ok := derived[g]; ok {
				continue
			}
			if _, ok := namesAny(names, derived); ok {
				derived[g], changed = g, true
			}
		}
	}
	return derived
}

// namesAny reports whether names holds one of derived's names, with the generated
// column it goes through ("" when it is the fencing column itself, preferred).
func namesAny(names []string, derived map[string]string) (via string, ok bool) {
	for _, n := range names {
		if n == anyColumn {
			return "", true
		}
		if v, hit := derived[n]; hit {
			if v == "" {
				return "", true
			}
			via, ok = v, true
		}
	}
	return via, ok
}

// anyColumn stands, in exprNames' result, for every column: the names of an
// expression that cannot be lexed (namesAny counts it as naming the fencing column:
// fail closed). No column name holds a NUL byte.
const anyColumn = "\x00"

// exprNames returns the lower-case names (bare words and quoted identifiers) an
// expression the server stored spells, or anyColumn when it cannot be lexed.
func exprNames(expr string) []string {
	toks, err := dialect.LexDDL(expr, dialect.MySQLSyntax)
	if err != nil {
		return []string{anyColumn}
	}
	var out []string
	for _, tk := range toks {
		if tk.Kind != dialect.DDLWord && tk.Kind != dialect.DDLQuoted {
			continue
		}
		if n, ok := tk.Name(); ok {
			out = append(out, strings.ToLower(n))
		}
	}
	return out
}

// throughGenerated is the words for a key that depends on the fencing column through
// the generated column via ("" when it names the column itself).
func throughGenerated(via string) string {
	if via == "" {
		return ""
	}
	return ", through the generated column " + via
}
