package plan

import (
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Claims of an absent key (PostgreSQL; docs/design.md G10, red-team rt42e F1). A
// claim stamps the rows its locking read finds; one that finds none stamps nothing,
// and an older holder could then create the key the newer one had read as absent. A
// claim whose WHERE pins every column of its table's primary key by equality names at
// most one key, which the wrapper records, when the claim found no row, as "absence
// claimed at the token" in the table's tombstones (dialect.AbsenceRecorder): the
// tombstone guard then refuses that key's INSERT under an older token.
//
// The planner finds the candidate conjuncts (KeyTerms); the wrapper, which knows the
// table's primary key, matches them (Plan.AbsentKey). A conjunct is column = value or
// value = column at the top level of the WHERE (joined by AND only: an OR, BETWEEN or
// CASE at that level gives no terms), possibly in parentheses, the column bare or
// behind one or two qualifiers (in a single-table claim they name its table), the value
// a placeholder $n or a literal whose value the wrapper can pass on unchanged: an
// unsigned integer, or a plain '…' string without a backslash (its meaning then does
// not depend on standard_conforming_strings). Any other value — a cast, an expression,
// an E'' string — gives no term, and the claim of an absent key then records nothing
// (the limit documented in G10).

// KeyTerm is a conjunct of a PostgreSQL claim's WHERE that fixes a column to a value.
type KeyTerm struct {
	Column string // as PostgreSQL names it: unquoted names folded to lower case
	Arg    int    // the caller's argument index of a placeholder $n (n-1), or -1
	Lit    string // the literal's value when Arg < 0
}

// keyTerms returns the conjuncts column = value of the PostgreSQL condition
// sig[from:to], or nil when the condition is not a plain conjunction at its top level.
func (p *parser) keyTerms(from, to int) []KeyTerm {
	var out []KeyTerm
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
			case !p.kw(k, "AND"):
				continue
			}
		}
		if depth != 0 {
			return nil
		}
		if start < k && p.punct(start, "(") && p.punct(k-1, ")") && p.closes(start, k-1) {
			out = append(out, p.keyTerms(start+1, k-1)...)
		} else if term, ok := p.keyTerm(start, k); ok {
			out = append(out, term)
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
	col, arg, lit, ok := p.eqTerm(from, to, p.keyColumn, p.keyValue)
	return KeyTerm{Column: col, Arg: arg, Lit: lit}, ok
}

// keyColumn reads sig[from:to] as a column name, bare or behind one or two qualifiers,
// and returns it as PostgreSQL names it.
func (p *parser) keyColumn(from, to int) (string, bool) {
	for to-from > 1 {
		if to-from < 3 || !p.isName(from) || !p.punct(from+1, ".") {
			return "", false
		}
		from += 2
	}
	if to-from != 1 || !p.isName(from) {
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
		name = sqllex.LowerASCII(name)
	}
	return name, true
}

// isName reports whether sig[k] is a bare word or a "…" quoted name.
func (p *parser) isName(k int) bool {
	t := p.sig[k]
	return t.Kind == sqllex.KindWord || t.Kind == sqllex.KindQuotedIdent && p.src[t.Start] == '"'
}

// keyValue reads sig[from:to] as a placeholder $n (its argument index), an unsigned
// integer literal, or a plain string literal without a backslash (its value).
func (p *parser) keyValue(from, to int) (arg int, lit string, ok bool) {
	if to-from != 1 {
		return 0, "", false
	}
	t := p.sig[from]
	txt := p.text(t)
	switch {
	case t.Kind == sqllex.KindParam && strings.HasPrefix(txt, "$"):
		n, err := strconv.Atoi(txt[1:])
		if err != nil || n < 1 {
			return 0, "", false
		}
		return n - 1, "", true
	case t.Kind == sqllex.KindNumber && len(txt) <= 18 && strings.Trim(txt, "0123456789") == "":
		return -1, txt, true
	case t.Kind == sqllex.KindString && len(txt) >= 2 && txt[0] == '\'' && txt[len(txt)-1] == '\'' && !strings.Contains(txt, `\`):
		return -1, strings.ReplaceAll(txt[1:len(txt)-1], "''", "'"), true
	}
	return 0, "", false
}

// AbsentKey returns, in the key's order, the terms of p (a PostgreSQL claim) that pin
// each column of the primary key cols (the catalog's names), compared exactly; ok false
// when a column is not pinned.
func (p *Plan) AbsentKey(cols []KeyColumn) (terms []KeyTerm, ok bool) {
	if len(p.Absent) == 0 || len(cols) == 0 {
		return nil, false
	}
	terms = make([]KeyTerm, len(cols))
	for i, c := range cols {
		found := false
		for _, t := range p.Absent {
			if t.Column == c.Name {
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
