package plan

import "strings"

// tableListJoinWords are the words that end a table reference or an ON condition in a
// MySQL/MariaDB table list (tableQualifiers).
var tableListJoinWords = []string{"SET", "JOIN", "INNER", "LEFT", "RIGHT", "CROSS", "NATURAL", "STRAIGHT_JOIN", "OUTER"}

// tableQualifiers reads the MySQL/MariaDB table list sig[i:end] of a multi-table UPDATE
// or DELETE (t1 [AS] a JOIN t2 b ON … , t3 …) and returns the names that qualify its
// tables, lower-cased: each table's alias, or its name when it has none, as guarded
// (the table is guarded) or plain (it is not). A name can be in both. ok is false for a
// list it cannot read (a parenthesised join, a derived table, partition or index
// hints, an alias it cannot decode): the callers then refuse.
func (p *parser) tableQualifiers(i, end int) (guarded, plain map[string]bool, ok bool) {
	guarded, plain = map[string]bool{}, map[string]bool{}
	k := i
	for {
		r, ok := p.parseName(k)
		if !ok {
			return nil, nil, false
		}
		p.parseAlias(&r, append(tableListJoinWords, "ON", "USING", "PARTITION", "USE", "FORCE", "IGNORE", "WHERE")...)
		qual := strings.ToLower(r.parts[len(r.parts)-1])
		if r.alias != "" {
			n, ok := p.ident(r.aliasEnd - 1)
			if !ok {
				return nil, nil, false
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
			k = p.listEnd(k+1, end, tableListJoinWords...)
		case p.kw(k, "USING") && p.punct(k+1, "("):
			if k = p.matching(k + 1); k < 0 {
				return nil, nil, false
			}
			k++
		}
		if k == end {
			return guarded, plain, true
		}
		if p.punct(k, ",") {
			k++
			continue
		}
		for p.kwIn(k, "NATURAL", "INNER", "CROSS", "LEFT", "RIGHT", "OUTER") {
			k++
		}
		if !p.kwIn(k, "JOIN", "STRAIGHT_JOIN") {
			return nil, nil, false
		}
		k++
	}
}
