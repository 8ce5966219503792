package sqlite

import (
	"sort"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// keyFencing returns the unique keys of the table dec describes that depend on the
// fencing column col, each as dialect.KeyFencingColumn's key (its name, and how when
// it is not a plain key column; red-team rt59d F1 for the plain key columns, rt60b F1
// for the other forms). A key is a key however SQLite enforces it:
//
//   - col is a column of the PRIMARY KEY or of a UNIQUE constraint or index;
//   - a unique index on an expression, or a partial unique index, names col in its
//     expressions or its WHERE (its CREATE INDEX text, read token by token: any name
//     spelled like col, folded as SQLite folds names (foldName), counts — over-reporting rather than parsing the
//     expression: "+id", "id + 0", "abs(id)", "WHERE version > 0");
//   - the same of a generated column whose AS (…) names col or another such generated
//     column (SQLite lets a generated column name another).
//
// Its result is sorted, one entry per key.
func keyFencing(dec declaration, col string) []string {
	derived := derivedColumns(dec, col)
	found := map[string]string{} // key → its description
	for name, via := range derived {
		if key, ok := dec.keys[name]; ok {
			if _, dup := found[key]; !dup || via == "" {
				found[key] = key + throughGenerated(via)
			}
		}
	}
	for index, sql := range dec.exprKeys {
		if _, ok := found[index]; ok {
			continue
		}
		via, ok := indexNames(sql, derived)
		if ok {
			found[index] = index + ", through an index expression or predicate" + throughGenerated(via)
		}
	}
	out := make([]string, 0, len(found))
	for _, k := range found {
		out = append(out, k)
	}
	sort.Strings(out)
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

// derivedColumns returns the names (foldName) of col and of the generated columns
// computed from it (directly or through another), each mapped to the generated column
// it is, as declared ("" for col itself). A generated column whose definition cannot
// be found in the CREATE TABLE text is counted as computed from col (fail closed).
// Names fold as SQLite folds them, ASCII letters only: a generated column "é" is not
// "É" (red-team rt61b F3).
func derivedColumns(dec declaration, col string) map[string]string {
	derived := map[string]string{foldName(col): ""}
	if len(dec.generated) == 0 {
		return derived
	}
	exprs := generatedExprs(dec.sql)
	for changed := true; changed; {
		changed = false
		for g, declared := range dec.generated {
			if _, ok := derived[g]; ok {
				continue
			}
			names, ok := exprs[g]
			if !ok {
				derived[g], changed = declared, true
				continue
			}
			for _, n := range names {
				if _, ok := derived[n]; ok {
					derived[g], changed = declared, true
					break
				}
			}
		}
	}
	return derived
}

// generatedExprs maps each column of a CREATE TABLE text that has an AS (…) clause
// (its name folded: foldName) to the names (folded) its parenthesised expression
// spells. A text that cannot be read gives an empty map (the callers fail closed).
func generatedExprs(sql string) map[string][]string {
	out := map[string][]string{}
	body, err := tableBody(sql)
	if err != nil {
		return out
	}
	for _, it := range body.items {
		toks := body.toks[it[0]:it[1]]
		if len(toks) == 0 {
			continue
		}
		name, ok := toks[0].Name()
		if !ok {
			continue
		}
		for i := 1; i+1 < len(toks); i++ {
			if toks[i].Kind == dialect.DDLPunct && toks[i].Text == "(" {
				if !toks[i-1].Is("AS") {
					i = body.match[it[0]+i] - it[0]
					continue
				}
				end := body.match[it[0]+i] - it[0]
				var names []string
				for _, tk := range toks[i+1 : end] {
					if n, ok := tk.Name(); ok {
						names = append(names, foldName(n))
					}
				}
				out[foldName(name)] = names
				break
			}
		}
	}
	return out
}

// indexNames reports whether the CREATE INDEX text sql names one of the columns of
// derived in its column list or its WHERE (every name after the first parenthesis
// that follows ON), with the generated column it goes through ("" for the fencing
// column itself). A text that cannot be read counts as naming it (fail closed).
func indexNames(sql string, derived map[string]string) (via string, ok bool) {
	toks, err := dialect.LexDDL(sql, dialect.SQLiteSyntax)
	if err != nil {
		return "", true
	}
	on := -1
	for i, tk := range toks {
		if tk.Is("ON") {
			on = i
			break
		}
	}
	if on < 0 {
		return "", true
	}
	i := on + 1
	for i < len(toks) && !(toks[i].Kind == dialect.DDLPunct && toks[i].Text == "(") {
		i++
	}
	if i == len(toks) {
		return "", true
	}
	found := false
	for _, tk := range toks[i:] {
		n, isName := tk.Name()
		if !isName {
			continue
		}
		if v, hit := derived[foldName(n)]; hit {
			if v == "" {
				return "", true
			}
			via, found = v, true
		}
	}
	return via, found
}
