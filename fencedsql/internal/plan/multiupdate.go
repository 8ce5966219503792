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
	guarded := map[string]bool{} // qualifiers of guarded tables, lower-cased
	plain := map[string]bool{}   // qualifiers of other tables
	joinWords := []string{"SET", "JOIN", "INNER", "LEFT", "RIGHT", "CROSS", "NATURAL", "STRAIGHT_JOIN", "OUTER"}
	k := i
	for {
		r, ok := p.parseName(k)
		if !ok {
			return refuse("whose table list it cannot read")
		}
		p.parseAlias(&r, append(joinWords, "ON", "USING", "PARTITION", "USE", "FORCE", "IGNORE")...)
		qual := strings.ToLower(r.parts[len(r.parts)-1])
		if r.alias != "" {
			n, ok := p.ident(r.aliasEnd - 1)
			if !ok {
				return refuse("with an alias it cannot decode")
			}
			qual = strings.ToLower(n)
		}
		if p.rw.Lookup(r.parts) != nil {
			guarded[qual] = true
		} else {
			plain[qual] = true
		}
		k = r.aliasEnd
		switch {
		case p.kw(k, "ON"):
			k = p.listEnd(k+1, set, joinWords...)
		case p.kw(k, "USING") && p.punct(k+1, "("):
			if k = p.matching(k + 1); k < 0 {
				return refuse("whose table list it cannot read")
			}
			k++
		}
		if k == set {
			break
		}
		switch {
		case p.punct(k, ","):
			k++
			continue
		}
		for p.kwIn(k, "NATURAL", "INNER", "CROSS", "LEFT", "RIGHT", "OUTER") {
			k++
		}
		if !p.kwIn(k, "JOIN", "STRAIGHT_JOIN") {
			return refuse("whose table list it cannot read")
		}
		k++
	}
	end := p.clauseEnd(set+1, "WHERE", "ORDER", "LIMIT")
	for k = set + 1; k < end; k++ {
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
		case depth == 0 && (p.punct(i, ",") || p.kwIn(i, words...)):
			return i
		}
	}
	return end
}
