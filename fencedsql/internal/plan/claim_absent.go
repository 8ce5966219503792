package plan

import (
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Claims of an absent key (docs/design.md G10, red-team rt42e F1). A claim stamps the
// rows its locking read finds; one that finds none stamps nothing, and an older
// holder could then create the key the newer one had read as absent. A claim whose
// WHERE pins every column of its table's primary key by equality names at most one
// key, which the wrapper records, when the claim found no row, as "absence claimed at
// the token" in the table's tombstones (dialect.AbsenceRecorder): the tombstone guard
// then refuses that key's INSERT under an older token.
//
// The planner finds the candidate conjuncts (KeyTerms); the wrapper, which knows the
// table's primary key, matches them (Plan.AbsentKey). A conjunct is column = value or
// value = column at the top level of the WHERE (joined by AND only: an OR, XOR,
// BETWEEN or CASE at that level gives no terms), possibly in parentheses, the column
// bare or behind one or two qualifiers (in a single-table claim they name its table),
// the value a placeholder or a literal whose value the wrapper can pass on unchanged:
// an unsigned integer, or a plain '…' string without a backslash (its meaning then
// depends neither on standard_conforming_strings nor on NO_BACKSLASH_ESCAPES). Any
// other value — a cast, an expression, an E'' string, a string with an introducer —
// gives no term, and the claim of an absent key then records nothing (the limit
// documented in G10). The dialects differ in the spelling, read by the same code:
//   - PostgreSQL: $n placeholders, "…" quoted columns compared exactly, unquoted ones
//     folded to lower case, as PostgreSQL folds them;
//   - MySQL/MariaDB: ? placeholders (numbered by position), `…` quoted or bare
//     columns, compared as the server compares column names (sameColumnName); the
//     same operators pointTerms refuses (holding '|', '&' or ':') and an executable
//     comment anywhere give no terms. The server compares an integer with a string as
//     doubles, so a term is matched with a key column of its kind only
//     (Plan.AbsentKey): an integer column with an integer, a string or binary column
//     with a string, no other column type.

// KeyTerm is a conjunct of a claim's WHERE that fixes a column to a value.
type KeyTerm struct {
	Column string // PostgreSQL: unquoted names folded to lower case; MySQL: as written, unquoted
	Arg    int    // the caller's argument index of a placeholder ($n: n-1; ?: its position), or -1
	Lit    string // the literal's value when Arg < 0
	Str    bool   // the literal was a '…' string (not an integer)
}

// keyTerms returns the conjuncts column = value of the condition sig[from:to] in the
// rewriter's dialect, or nil when the condition is not a plain conjunction at its top
// level.
func (p *parser) keyTerms(from, to int) []KeyTerm {
	if !p.rw.numbered {
		for _, t := range p.sig {
			if t.Kind == sqllex.KindExecComment {
				return nil
			}
		}
	}
	var out []KeyTerm
	for _, c := range p.conjuncts(from, to, !p.rw.numbered) {
		if term, ok := p.keyTerm(c[0], c[1]); ok {
			out = append(out, term)
		}
	}
	return out
}

// conjuncts returns the bounds of each conjunct at the top level of the condition
// sig[from:to], those of a conjunct wholly in parentheses in its place when they are
// a plain conjunction too, or nil when the condition is not a plain conjunction at its
// top level (pointBreakers; with mysql, an operator holding '|', '&' or ':', which
// MySQL reads as OR, AND or an assignment).
func (p *parser) conjuncts(from, to int, mysql bool) [][2]int {
	var out [][2]int
	depth, start := 0, from
	for k := from; k <= to; k++ {
		if k < to {
			t := p.sig[k]
			switch {
			case p.punct(k, "("):
				depth++
				continue
			case p.punct(k, ")"):
				depth--
				continue
			case depth > 0:
				continue
			case t.Kind == sqllex.KindWord && pointBreakers[strings.ToLower(p.text(t))]:
				return nil
			case mysql && t.Kind == sqllex.KindPunct && strings.ContainsAny(p.text(t), "|&:"):
				return nil
			case !p.kw(k, "AND"):
				continue
			}
		}
		if depth != 0 {
			return nil
		}
		if start < k && p.punct(start, "(") && p.punct(k-1, ")") && p.closes(start, k-1) {
			out = append(out, p.conjuncts(start+1, k-1, mysql)...)
		} else {
			out = append(out, [2]int{start, k})
		}
		start = k + 1
	}
	return out
}

// closes reports whether the ')' at sig[to] closes the '(' at sig[from].
func (p *parser) closes(from, to int) bool {
	depth := 0
	for k := from; k <= to; k++ {
		switch {
		case p.punct(k, "("):
			depth++
		case p.punct(k, ")"):
			depth--
			if depth == 0 {
				return k == to
			}
		}
	}
	return false
}

// keyTerm reads sig[from:to] as column = value or value = column.
func (p *parser) keyTerm(from, to int) (KeyTerm, bool) {
	str := false
	value := func(from, to int) (int, string, bool) {
		arg, lit, ok := p.keyValue(from, to)
		str = ok && arg < 0 && p.sig[from].Kind == sqllex.KindString
		return arg, lit, ok
	}
	col, arg, lit, ok := p.eqTerm(from, to, p.keyColumn, value)
	return KeyTerm{Column: col, Arg: arg, Lit: lit, Str: str}, ok
}

// keyColumn reads sig[from:to] as a column name, bare or behind one or two qualifiers,
// and returns it as the dialect names it (PostgreSQL folds an unquoted name).
func (p *parser) keyColumn(from, to int) (string, bool) {
	isName := p.isName
	if !p.rw.numbered {
		isName = p.isColumnWord
	}
	for to-from > 1 {
		if to-from < 3 || !isName(from) || !p.punct(from+1, ".") {
			return "", false
		}
		from += 2
	}
	if to-from != 1 || !isName(from) {
		return "", false
	}
	name, quoted, ok := sqllex.Ident(p.src, p.sig[from])
	if !ok {
		return "", false
	}
	if !quoted {
		if bareValues[strings.ToLower(name)] || sqllex.IsKeyword(p.src, p.sig[from], "AND") {
			return "", false
		}
		if p.rw.numbered {
			name = sqllex.LowerASCII(name)
		}
	}
	return name, true
}

// isName reports whether sig[k] is a bare word or a "…" quoted name.
func (p *parser) isName(k int) bool {
	t := p.sig[k]
	return t.Kind == sqllex.KindWord || t.Kind == sqllex.KindQuotedIdent && p.src[t.Start] == '"'
}

// keyValue reads sig[from:to] as a placeholder (its argument index: $n on
// PostgreSQL, ? on MySQL), an unsigned integer literal, or a plain string literal
// without a backslash (its value).
func (p *parser) keyValue(from, to int) (arg int, lit string, ok bool) {
	if to-from != 1 {
		return 0, "", false
	}
	t := p.sig[from]
	txt := p.text(t)
	switch {
	case !p.rw.numbered && t.Kind != sqllex.KindString:
		return p.pointValue(from, to)
	case t.Kind == sqllex.KindParam && strings.HasPrefix(txt, "$"):
		n, err := strconv.Atoi(txt[1:])
		if err != nil || n < 1 {
			return 0, "", false
		}
		return n - 1, "", true
	case t.Kind == sqllex.KindNumber && keyIntLiteral(txt):
		return -1, txt, true
	case t.Kind == sqllex.KindString && len(txt) >= 2 && txt[0] == '\'' && txt[len(txt)-1] == '\'' && !strings.Contains(txt, `\`):
		return -1, strings.ReplaceAll(txt[1:len(txt)-1], "''", "'"), true
	}
	return 0, "", false
}

// AbsentKey returns, in the key's order, the terms of p (a claim) that pin each
// column of the primary key cols (the catalog's names and, on MySQL, COLUMN_TYPEs);
// ok false when a column is not pinned. arg returns the caller's argument i's value
// (false: none usable). PostgreSQL compares the names exactly and types the value by
// the column (the claim's WHERE and the recorder's parameters alike). MySQL/MariaDB
// compare the names as the server does (sameColumnName), and a term pins a column
// only with a value of the column's kind: an integer column with an unsigned integer
// literal or an int64 or uint64 argument, a character or binary string column with a
// '…' literal or a string or []byte argument. Any other pairing — a string compared
// with an integer column, or the reverse, is compared as doubles, which more than one
// key can equal ('05' and '5' both equal 5) — and any other column type (DECIMAL,
// dates, ENUM) pins nothing.
func (p *Plan) AbsentKey(cols []KeyColumn, arg func(i int) (any, bool)) (terms []KeyTerm, ok bool) {
	if len(p.Absent) == 0 || len(cols) == 0 {
		return nil, false
	}
	terms = make([]KeyTerm, len(cols))
	for i, c := range cols {
		found := false
		for _, t := range p.Absent {
			if p.absentMySQL && sameColumnName(t.Column, c.Name) && mysqlKeyKind(t, c.Type, arg) || !p.absentMySQL && t.Column == c.Name {
				terms[i], found = t, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return terms, true
}

// AbsentOther reports whether the WHERE of p (a claim whose terms pin a key of n
// columns: AbsentKey) has a conjunct besides those n — id = 7 AND balance = 5 (red-team
// rt46b F4): a claim that then finds no row may have found the key's row not meeting
// the other conjuncts, and the key is not absent. A repeated key conjunct counts as
// another.
func (p *Plan) AbsentOther(n int) bool { return p.absentConjuncts > n }

// mysqlKeyKind reports whether the term t's value is of the kind of a MySQL key
// column of COLUMN_TYPE typ (AbsentKey).
func mysqlKeyKind(t KeyTerm, typ string, arg func(i int) (any, bool)) bool {
	typ = strings.ToLower(strings.TrimSpace(typ))
	var v any
	if t.Arg >= 0 {
		var ok bool
		if v, ok = arg(t.Arg); !ok {
			return false
		}
	}
	switch {
	case integerType(typ):
		if t.Arg < 0 {
			return !t.Str
		}
		switch v.(type) {
		case int64, uint64:
			return true
		}
	case stringKeyType(typ):
		if t.Arg < 0 {
			return t.Str
		}
		switch v.(type) {
		case string, []byte:
			return true
		}
	}
	return false
}

// stringKeyType reports whether the MySQL COLUMN_TYPE t (lower case) is a character
// or binary string type.
func stringKeyType(t string) bool {
	for _, p := range []string{"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"} {
		if t == p || strings.HasPrefix(t, p+"(") || strings.HasPrefix(t, p+" ") {
			return true
		}
	}
	return false
}
