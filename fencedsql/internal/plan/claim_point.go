package plan

import (
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Point claims (MySQL/MariaDB). The keyed claim (claim_keyed.go) records the rows its
// fencing UPDATE stamps because the read after it could select others carrying the
// token. A selection that fixes every column of the primary key to one integer cannot:
// it names at most one row, the same row in both statements, so the read returns that
// row or nothing, and the wrapper's count check (the rows read against the rows
// stamped, fencedsql's exact.go) tells a read that differs from the stamp: whatever
// else the condition holds (a function, a column the UPDATE changes) may drop the row
// in the read, or find it there when the UPDATE did not (the statement's clock, after
// a lock wait). A condition whose text reads the clock stays keyed (its read then
// finds nothing, as a keyed claim's does); a point claim runs unkeyed: no record, no
// nonce, the statements a claim ran before keyed claims existed.
//
// The planner finds the candidate conjuncts (PointTerm); the wrapper, which knows the
// table's primary key and the arguments, decides (Plan.FixesKey): every key column an
// integer type, each fixed by a conjunct whose value is an integer, the names compared
// as the server compares them (sameColumnName). An integer
// compared with a string or a float is compared as a double, which more than one
// BIGINT can equal; an integer with an integer is exact.

// PointTerm is a conjunct of a claim's WHERE of the form column = value (either side),
// where value is a placeholder or an unsigned integer literal.
type PointTerm struct {
	Column string // unquoted, as written
	Arg    int    // the caller's argument index of a placeholder, or -1
	Lit    string // the literal's digits when Arg < 0
}

// pointBreakers are words that, at the top level of a condition, make its top-level
// ANDs not all conjunctions of the whole condition: operators of lower precedence
// than AND, and constructs holding an AND of their own (BETWEEN … AND, CASE WHEN a
// AND b).
var pointBreakers = map[string]bool{"or": true, "xor": true, "between": true, "case": true, "when": true, "then": true, "else": true, "end": true}

// bareValues are words MySQL reads as a value, not a column, when written without
// quotes: a column of such a name must be quoted to be named.
var bareValues = map[string]bool{"null": true, "true": true, "false": true, "unknown": true, "default": true,
	"current_date": true, "current_time": true, "current_timestamp": true, "current_user": true, "current_role": true,
	"localtime": true, "localtimestamp": true, "utc_date": true, "utc_time": true, "utc_timestamp": true}

// pointTerms returns the conjuncts column = value of the condition sig[from:to] (a
// WHERE clause's body; conjuncts, claim_absent.go), or nil when the condition is not a
// plain conjunction at its top level (pointBreakers, an operator holding '|', '&' or
// ':', an executable comment anywhere in the statement).
func (p *parser) pointTerms(from, to int) []PointTerm {
	for _, t := range p.sig {
		if t.Kind == sqllex.KindExecComment {
			return nil
		}
	}
	var out []PointTerm
	for _, c := range p.conjuncts(from, to, true) {
		if term, ok := p.pointTerm(c[0], c[1]); ok {
			out = append(out, term)
		}
	}
	return out
}

// pointTerm reads sig[from:to] as column = value or value = column (the column
// optionally qualified once).
func (p *parser) pointTerm(from, to int) (PointTerm, bool) {
	col, arg, lit, ok := p.eqTerm(from, to, p.pointColumn, p.pointValue)
	return PointTerm{Column: col, Arg: arg, Lit: lit}, ok
}

// pointColumn reads sig[from:to] as a column name, bare or behind one qualifier. In a
// single-table SELECT any qualifier the server accepts names that table.
func (p *parser) pointColumn(from, to int) (string, bool) {
	switch {
	case to-from == 3 && p.isColumnWord(from) && p.punct(from+1, "."):
		from += 2
	case to-from != 1:
		return "", false
	}
	if !p.isColumnWord(from) {
		return "", false
	}
	name, quoted, ok := sqllex.Ident(p.src, p.sig[from])
	if !ok || !quoted && bareValues[strings.ToLower(name)] {
		return "", false
	}
	return name, true
}

// isColumnWord reports whether sig[k] is a bare word or a backquoted name (a "…" may be
// a string on MySQL).
func (p *parser) isColumnWord(k int) bool {
	t := p.sig[k]
	return t.Kind == sqllex.KindWord || t.Kind == sqllex.KindQuotedIdent && p.src[t.Start] == '`'
}

// pointValue reads sig[from:to] as a '?' placeholder (its argument index) or an
// unsigned integer literal (keyIntLiteral).
func (p *parser) pointValue(from, to int) (arg int, lit string, ok bool) {
	if to-from != 1 {
		return 0, "", false
	}
	t := p.sig[from]
	txt := p.text(t)
	switch {
	case t.Kind == sqllex.KindParam && txt == "?":
		n := 0
		for _, s := range p.sig[:from] {
			if s.Kind == sqllex.KindParam {
				n++
			}
		}
		return n, "", true
	case t.Kind == sqllex.KindNumber && keyIntLiteral(txt):
		return -1, txt, true
	}
	return 0, "", false
}

// keyIntLiteral reports whether txt, a number token, is an unsigned integer literal
// (digits only) whose value fits an unsigned 64-bit integer: every value an integer
// key column of either database can hold (BIGINT UNSIGNED included), so one the
// claim's key term may carry. A literal of 19 or 20 digits is one too (red-team rt47e
// F2: snowflake-style ids were left unpinned, and a claim of such an absent key
// recorded nothing); one beyond 64 bits pins nothing.
func keyIntLiteral(txt string) bool {
	if txt == "" || strings.Trim(txt, "0123456789") != "" {
		return false
	}
	_, err := strconv.ParseUint(txt, 10, 64)
	return err == nil
}

// FixesKey reports whether the claim p selects at most one row by its key: every
// column of the primary key cols (the catalog's names and types) is an integer type
// and fixed by one of p's PointTerms to an integer — a literal, or an argument
// whose value (arg, given the index) is an int64 or uint64.
func (p *Plan) FixesKey(cols []KeyColumn, arg func(i int) (any, bool)) bool {
	if len(p.Point) == 0 || len(cols) == 0 {
		return false
	}
	for _, c := range cols {
		if !integerType(strings.ToLower(strings.TrimSpace(c.Type))) || !p.fixes(c.Name, arg) {
			return false
		}
	}
	return true
}

// fixes reports whether one of p's PointTerms fixes column col to an integer.
func (p *Plan) fixes(col string, arg func(i int) (any, bool)) bool {
	for _, t := range p.Point {
		if !sameColumnName(t.Column, col) {
			continue
		}
		if t.Arg < 0 {
			return true
		}
		if v, ok := arg(t.Arg); ok {
			switch v.(type) {
			case int64, uint64:
				return true
			}
		}
	}
	return false
}

// sameColumnName reports whether the names a and b are the same column's on
// MySQL/MariaDB for a point claim: equal but for the case of ASCII letters. A name
// with any other byte is no one's: the server folds names under its own collation,
// in which Unicode's case pairs are not all one name (ſ and s are two columns there,
// one to strings.EqualFold; red-team rt19p F1).
func sameColumnName(a, b string) bool {
	for _, s := range []string{a, b} {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return false
			}
		}
	}
	return sqllex.LowerASCII(a) == sqllex.LowerASCII(b)
}
