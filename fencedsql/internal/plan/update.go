package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// update plans an UPDATE. A single-table UPDATE of a guarded table gets the fencing
// assignments appended to its SET list: the token column becomes NULL (a NOT NULL
// violation, mapped to ErrFenced) on any targeted row that a newer token wrote, so the
// statement fails whole. Multi-table forms and modifiers that soften errors are refused.
func (p *parser) update(versioned bool) (*Plan, error) {
	i, mods := p.readModifiers(p.start+1, true, "LOW_PRIORITY", "ONLY")
	r, ok := p.parseTarget(i)
	if !ok {
		return p.unknownShape("an UPDATE")
	}
	p.descendants(&r)
	if !p.skipPartition(&r) {
		return p.unknownShape("an UPDATE")
	}
	portion := p.forPortion(r.aliasEnd) // before parseAlias reads FOR as an alias
	p.parseAlias(&r, "SET", "INDEXED", "NOT", "USE", "FORCE", "IGNORE")
	j := p.indexHints(r.aliasEnd)
	if p.kw(j, "INDEXED") || p.kw(j, "NOT") {
		for j < len(p.sig) && !p.kw(j, "SET") {
			j++
		}
	}
	g := p.rw.Lookup(r.parts)
	if portion {
		if g == nil {
			return p.pass(), nil // another table's UPDATE, as below
		}
		return nil, refusePortion(g)
	}
	if !p.kw(j, "SET") {
		// Multi-table UPDATE (MySQL: a, b / JOIN …).
		return p.multiUpdate(i, g)
	}
	if g == nil {
		return p.pass(), nil
	}
	if mods.changesNotNull() {
		return nil, unsupported(g.String(), "UPDATE OR %s (it changes what a NOT NULL violation does)", mods.or)
	}
	if mods.ignore {
		return nil, unsupported(g.String(), "UPDATE IGNORE (it turns the fencing error into a warning)")
	}
	p.setOwnTarget(r)
	setStart := j + 1
	setEnd := p.clauseEnd(setStart, "FROM", "WHERE", "RETURNING", "ORDER", "LIMIT")
	for p.kw(setEnd, "FROM") && p.kw(setEnd-1, "DISTINCT") { // a IS [NOT] DISTINCT FROM b
		setEnd = p.clauseEnd(setEnd+1, "FROM", "WHERE", "RETURNING", "ORDER", "LIMIT")
	}
	q := ""
	if p.kw(setEnd, "FROM") {
		// UPDATE … FROM (PostgreSQL, SQLite): the fencing CASE reads the target row's
		// own columns, so every updated target row is fenced however many join rows
		// match it; the references are qualified, since a joined table may have
		// columns of the same names.
		q = p.qualifier(r)
	}
	if setEnd == setStart {
		return nil, unsupported(g.String(), "an UPDATE with an empty SET list")
	}
	set, err := p.setList(g, setStart, setEnd)
	if err != nil {
		return nil, err
	}
	nUser, err := p.checkParams(g)
	if err != nil {
		return nil, err
	}
	b := p.newBuilder(nUser)
	b.spliceAssignments(0, p.endOf(setEnd), set, g, q, versioned)
	return b.finish(KindUpdate, g), nil
}

// indexHints returns the index past the MySQL/MariaDB index hints at sig[j]
// (`USE|FORCE|IGNORE INDEX|KEY [FOR JOIN|FOR ORDER BY|FOR GROUP BY] (…)`, several,
// separated by blanks or commas), or j where there are none. A single-table UPDATE
// keeps them: they choose how the server finds the rows, in the one statement that
// also fences them (red-team rt27b F3: the UPDATE was refused as a multi-table one).
func (p *parser) indexHints(j int) int {
	if p.rw.syn != sqllex.MySQL {
		return j
	}
	for first := true; ; first = false {
		k := j
		if !first && p.punct(k, ",") {
			k++
		}
		if !p.kwIn(k, "USE", "FORCE", "IGNORE") || !p.kwIn(k+1, "INDEX", "KEY") {
			return j
		}
		k += 2
		if p.kw(k, "FOR") {
			switch {
			case p.kw(k+1, "JOIN"):
				k += 2
			case p.kwIn(k+1, "ORDER", "GROUP") && p.kw(k+2, "BY"):
				k += 3
			default:
				return j
			}
		}
		if !p.punct(k, "(") {
			return j
		}
		end := p.matching(k)
		if end < 0 {
			return j
		}
		j = end + 1
	}
}
