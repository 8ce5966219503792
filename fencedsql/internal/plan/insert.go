package plan

// insert plans an INSERT into a guarded table: the token and version columns are added
// to the column list and each VALUES row (or to MySQL's SET list); an upsert clause is
// fenced by insertTail.
func (p *parser) insert(versioned bool) (*Plan, error) {
	i, mods := p.readModifiers(p.start+1, true, "LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY")
	i = p.skipInto(i)
	r, ok := p.parseName(i)
	if !ok {
		return p.unknownShape("an INSERT")
	}
	if !p.skipPartition(&r) {
		return p.unknownShape("an INSERT")
	}
	p.parseAlias(&r, "VALUES", "VALUE", "SET", "SELECT", "DEFAULT", "OVERRIDING", "PARTITION")
	g := p.rw.Lookup(r.parts)
	if g == nil {
		return p.pass(), nil
	}
	if mods.ignore {
		return nil, unsupported(g.String(), "INSERT IGNORE (it turns the fencing error into a warning)")
	}
	if mods.delayed {
		// The fenced statement is always sent with its token bound, and MariaDB refuses
		// DELAYED in a prepared statement (Error 1616), after the round trip; InnoDB
		// ignores DELAYED anyway (red-team rt45f F1).
		return nil, unsupported(g.String(), "INSERT DELAYED (the fenced statement is sent with its token as a bind parameter, and MariaDB refuses DELAYED in a prepared statement; drop DELAYED, which InnoDB ignores)")
	}
	if mods.changesNotNull() {
		return nil, unsupported(g.String(), "INSERT OR %s", mods.or)
	}
	nUser, err := p.checkParams(g)
	if err != nil {
		return nil, err
	}
	b := p.newBuilder(nUser)
	j := r.aliasEnd
	q := p.qualifier(r)
	p.setOwnTarget(r)

	if p.kw(j, "SET") { // MySQL: INSERT INTO t SET a = 1, b = 2
		end := p.clauseEnd(j+1, "ON", "RETURNING", "AS") // AS: MySQL 8's row alias
		set, err := p.setList(g, j+1, end)
		if err != nil {
			return nil, err
		}
		at := p.endOf(end)
		b.copyExcept(0, at, set)
		b.countRow(b.params())
		if set.kept > 0 {
			b.write(", ")
		}
		b.write(g.QTok + " = ")
		b.token()
		b.write(", " + g.QVer + " = 1")
		b.gap(at)
		return p.insertTail(b, g, q, end, at, versioned, -1, false)
	}
	if !p.punct(j, "(") {
		return nil, unsupported(g.String(), "INSERT without a column list")
	}
	colEnd := p.matching(j)
	if colEnd < 0 {
		return nil, unsupported(g.String(), "INSERT with an unbalanced column list")
	}
	if colEnd == j+1 {
		return nil, unsupported(g.String(), "INSERT with an empty column list")
	}
	mapped, cols, err := p.columnList(g, j+1, colEnd)
	if err != nil {
		return nil, err
	}
	b.copyExcept(0, p.endOf(colEnd), cols)
	if cols.kept > 0 {
		b.write(", ")
	}
	b.write(g.QTok + ", " + g.QVer)
	k := colEnd + 1
	if p.kw(k, "OVERRIDING") {
		k += 3
	}
	if !p.kw(k, "VALUES") && !p.kw(k, "VALUE") {
		return nil, unsupported(g.String(), "INSERT … SELECT or DEFAULT VALUES")
	}
	k++
	last := colEnd - 1 // sig index of the last token copied
	for {
		if !p.punct(k, "(") {
			return nil, unsupported(g.String(), "INSERT with a VALUES list of an unknown shape")
		}
		end := p.matching(k)
		if end < 0 {
			return nil, unsupported(g.String(), "INSERT with an unbalanced VALUES row")
		}
		if end == k+1 {
			return nil, unsupported(g.String(), "INSERT with an empty VALUES row")
		}
		// Copy up to the row's last token without the values of mapped fencing
		// columns, then add our two values.
		row := p.items(k+1, end)
		if len(mapped) > 0 && (hasEmpty(row) || len(row) != cols.kept+len(mapped)) {
			return nil, unsupported(g.String(), "INSERT whose VALUES row has %d values for %d columns", len(row), cols.kept+len(mapped))
		}
		vals := p.dropItems(row, mapped)
		before := b.params()
		b.copyExcept(p.sig[last].End, p.endOf(end), vals)
		b.countRow(b.params() - before)
		if vals.kept > 0 {
			b.write(", ")
		}
		b.token()
		b.write(", 1")
		last = end - 1
		k = end + 1
		if p.punct(k, ",") {
			k++
			continue
		}
		break
	}
	return p.insertTail(b, g, q, k, p.sig[last].End, versioned, cols.kept+len(mapped), len(mapped) > 0)
}
