package plan

import "strings"

// multiUpdate plans a MySQL/MariaDB multi-table UPDATE (UPDATE t1 [AS] a JOIN t2 b ON …
// SET …, or UPDATE t1, t2 SET …) whose table list starts at sig[i]. It writes only the
// tables its SET targets name, so it passes when each target is qualified with the
// name or alias of a table that is not guarded: UPDATE other o JOIN accounts a ON …
// SET o.x = a.balance only reads accounts. A target of a guarded table, an unqualified
// target (the server picks the table by its columns), a qualifier that matches no
// table of the list, and a table list it cannot read (a parenthesised join, a derived
// table, partition or index hints) are refused when the statement names a guarded
// table.
func (p *parser) multiUpdate(i int, g *Table) (*Plan, error) {
	set := p.clauseEnd(i, "SET")
	if g == nil && !p.mentionsGuardIn(i, set) {
		return p.pass(), nil
	}
	refuse := func(why string) (*Plan, error) {
		return nil, unsupported(p.guardName(g), "a multi-table UPDATE %s", why)
	}
	if !p.kw(set, "SET") {
		return refuse("without a SET clause it can read")
	}
	guarded, plain, ok := p.tableQualifiers(i, set)
	if !ok {
		return refuse("whose table list it cannot read")
	}
	end := p.clauseEnd(set+1, "WHERE", "ORDER", "LIMIT")
	for k := set + 1; k < end; k++ {
		r, ok := p.parseName(k)
		if !ok || len(r.parts) < 2 || !p.assign(r.end) {
			return refuse("whose SET target is not qualified with a table of its list")
		}
		qual := strings.ToLower(r.parts[len(r.parts)-2])
		if guarded[qual] {
			return refuse("that sets a column of a guarded table")
		}
		if !plain[qual] {
			return refuse("whose SET target is not qualified with a table of its list")
		}
		k = p.listEnd(r.end+1, end)
	}
	return p.pass(), nil
}

// listEnd returns the sig index of the first top-level ',' or word in sig[i:end], or end.
func (p *parser) listEnd(i, end int, words ...string) int {
	depth := 0
	for ; i < end; i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
		case depth == 0 && (p.punct(i, ",") || p.kwIn(i, words...) && !(p.kwIn(i, "LEFT", "RIGHT") && p.punct(i+1, "("))):
			// (LEFT( and RIGHT( are the string functions, not joins: red-team rt33b F2.)
			return i
		}
	}
	return end
}
