package plan

// insertTail handles what follows the VALUES rows (or MySQL's SET list), starting at
// sig[k]: a MySQL row alias, ON CONFLICT, ON DUPLICATE KEY UPDATE, RETURNING. The
// source is copied into b up to byte offset from.
func (p *parser) insertTail(b *builder, g *Table, q string, k, from int, versioned bool) (*Plan, error) {
	if p.kw(k, "AS") { // MySQL 8 row alias: VALUES (…) AS new [(a, b)]
		k += 2
		if p.punct(k, "(") {
			if e := p.matching(k); e > 0 {
				k = e + 1
			}
		}
	}
	switch {
	case p.kw(k, "ON") && p.kw(k+1, "CONFLICT"):
		// SQLite allows several ON CONFLICT clauses: each DO UPDATE is fenced.
		for p.kw(k, "ON") && p.kw(k+1, "CONFLICT") {
			doAt := p.clauseEnd(k+2, "DO")
			if !p.kw(doAt, "DO") {
				return nil, unsupported(g.String(), "ON CONFLICT without DO")
			}
			if p.kw(doAt+1, "NOTHING") {
				k = doAt + 2
				continue
			}
			if !p.kw(doAt+1, "UPDATE") || !p.kw(doAt+2, "SET") {
				return nil, unsupported(g.String(), "ON CONFLICT of an unknown shape")
			}
			setStart := doAt + 3
			setEnd := p.clauseEnd(setStart, "WHERE", "RETURNING", "ON")
			set, err := p.setList(g, setStart, setEnd)
			if err != nil {
				return nil, err
			}
			at := p.endOf(setEnd)
			b.setListAt(from, at, set, g, q, versioned)
			from = at
			k = setEnd
			if p.kw(k, "WHERE") {
				k = p.clauseEnd(k+1, "RETURNING", "ON")
			}
		}
		if k < len(p.sig) && !p.kw(k, "RETURNING") && !p.punct(k, ";") {
			return nil, unsupported(g.String(), "INSERT with an unexpected clause %q", p.text(p.sig[k]))
		}
		b.copy(from, len(p.src))
		return p.finishInsert(b, g)
	case p.kw(k, "ON") && p.kw(k+1, "DUPLICATE"):
		if !p.kw(k+2, "KEY") || !p.kw(k+3, "UPDATE") {
			return nil, unsupported(g.String(), "ON DUPLICATE of an unknown shape")
		}
		setStart := k + 4
		setEnd := p.clauseEnd(setStart, "RETURNING")
		set, err := p.setList(g, setStart, setEnd)
		if err != nil {
			return nil, err
		}
		b.spliceAssignments(from, p.endOf(setEnd), set, g, "", versioned)
		return p.finishInsert(b, g)
	case k < len(p.sig) && !p.kw(k, "RETURNING") && !p.punct(k, ";"):
		return nil, unsupported(g.String(), "INSERT with an unexpected clause %q", p.text(p.sig[k]))
	}
	b.copy(from, len(p.src))
	return p.finishInsert(b, g)
}
