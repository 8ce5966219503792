package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// delete plans a DELETE of a guarded table as two statements in one transaction: a
// fencing UPDATE over the same rows (it fails whole if a newer token owns one of
// them, and stamps the token on the others), then the DELETE restricted to rows that
// now carry the token; and, where the dialect has a delete fence, as one statement
// (Plan.One). A selection the two statements could read differently marks the plan
// (Plan.TwoStepErr) rather than refusing it: the one statement is exact.
func (p *parser) delete(versioned bool) (*Plan, error) {
	i, mods := p.readModifiers(p.start+1, false, "LOW_PRIORITY", "QUICK")
	if p.isDeleteHistory(i) {
		if pl, handled, err := p.deleteHistory(i + 2); handled {
			return pl, err
		}
	}
	if !p.kw(i, "FROM") {
		// MySQL multi-table form: DELETE t1[, t2] FROM …
		return p.multiDelete(i, p.clauseEnd(i, "FROM"))
	}
	i++
	if p.rw.syn == sqllex.MySQL {
		// MySQL multi-table form: DELETE FROM t1[, t2] USING …
		if u := p.clauseEnd(i, "USING", "WHERE"); p.kw(u, "USING") {
			return p.multiDelete(i, u)
		}
	}
	tableStart := i // the fencing UPDATE keeps ONLY: it must not reach child tables
	if p.kw(i, "ONLY") {
		i++
	}
	r, ok := p.parseTarget(i)
	if !ok {
		return p.unknownShape("a DELETE")
	}
	p.descendants(&r)
	if !p.skipPartition(&r) {
		return p.unknownShape("a DELETE")
	}
	p.parseAlias(&r, "WHERE", "USING", "RETURNING", "ORDER", "LIMIT", "INDEXED", "NOT")
	if !p.skipPartition(&r) { // MySQL 8: DELETE FROM t AS a PARTITION (…)
		return p.unknownShape("a DELETE")
	}
	g := p.rw.Lookup(r.parts)
	j := r.aliasEnd
	if p.kw(j, "INDEXED") || p.kw(j, "NOT") {
		j = p.clauseEnd(j, "WHERE", "RETURNING", "ORDER", "LIMIT")
	}
	if p.punct(j, ",") || p.kw(j, "USING") || p.kw(j, "JOIN") {
		if g == nil && p.rw.numbered && p.kw(j, "USING") {
			// PostgreSQL's DELETE … USING deletes only from its target, which is not
			// guarded, and does not lock the rows it reads in the USING list.
			return p.pass(), nil
		}
		if g != nil || p.mentionsGuardIn(i, p.clauseEnd(j, "WHERE")) {
			return nil, unsupported(p.guardName(g), "a multi-table DELETE")
		}
		return p.pass(), nil
	}
	if g == nil {
		// Another table's DELETE: it may read a guarded table in its WHERE, but anything
		// else after the table (unknown syntax hiding a USING or a join) that names one
		// is refused.
		if j < len(p.sig) && !p.punct(j, ";") && !p.kwIn(j, "WHERE", "RETURNING", "ORDER", "LIMIT") && p.mentionsGuardIn(j, len(p.sig)) {
			return p.unknownShape("a DELETE")
		}
		return p.pass(), nil
	}
	if p.start > 0 {
		return nil, unsupported(g.String(), "WITH … DELETE on a guarded table (its fencing UPDATE would need the WITH list): delete without the WITH list, or select the keys first")
	}
	if mods.ignore {
		return nil, unsupported(g.String(), "DELETE IGNORE (it turns errors into warnings)")
	}
	nUser, err := p.checkParams(g)
	if err != nil {
		return nil, err
	}
	// Clauses after the table: WHERE, RETURNING, ORDER BY, LIMIT, in dialect order.
	clauses := map[string][2]int{} // keyword → [start, end) sig indexes
	k := j
	for k < len(p.sig) && !p.punct(k, ";") {
		var kw string
		for _, w := range []string{"WHERE", "RETURNING", "ORDER", "LIMIT"} {
			if p.kw(k, w) {
				kw = w
			}
		}
		if kw == "" {
			return nil, unsupported(g.String(), "DELETE with an unexpected clause %q", p.text(p.sig[k]))
		}
		end := p.clauseEnd(k+1, "WHERE", "RETURNING", "ORDER", "LIMIT")
		if _, dup := clauses[kw]; dup {
			return nil, unsupported(g.String(), "DELETE with two %s clauses", kw)
		}
		clauses[kw] = [2]int{k, end}
		k = end
	}
	// The fencing UPDATE copies WHERE, ORDER BY and LIMIT in that order (with their
	// placeholders): they must stand in that order in the DELETE too.
	if a, b := outOfOrder(clauses, "WHERE", "ORDER", "LIMIT"); a != "" {
		return nil, unsupported(g.String(), "a DELETE whose %s comes before its %s", b, a)
	}
	if w, ok := clauses["WHERE"]; ok {
		if p.kw(w[0]+1, "CURRENT") && p.kw(w[0]+2, "OF") {
			return nil, unsupported(g.String(), "DELETE … WHERE CURRENT OF")
		}
	}
	// The two-statement DELETE selects its rows again after the fencing UPDATE: a
	// selection that could find other rows the second time refuses that form
	// (TwoStepErr); the one-statement form selects once.
	// unstableErr is that refusal for the keyed form too (delete_keyed.go), which
	// deletes only rows its fencing UPDATE stamped, so that the clock and a window
	// cannot swap in others.
	var twoStepErr, unstableErr error
	for _, kw := range []string{"WHERE", "ORDER"} {
		c, ok := clauses[kw]
		if !ok {
			continue
		}
		if why := p.unstableSelection(g, c[0]+1, c[1]); why != "" && unstableErr == nil {
			unstableErr = unsupported(g.String(), "a DELETE whose %s %s", kw, why)
		}
		if twoStepErr == nil {
			twoStepErr = unstableErr
		}
		if why := p.clockSelection(c[0]+1, c[1]); why != "" && twoStepErr == nil {
			twoStepErr = unsupported(g.String(), "a DELETE whose %s %s", kw, why)
		}
	}
	if c, ok := clauses["LIMIT"]; ok && p.limitHasOffset(c) {
		return nil, unsupported(g.String(), "a DELETE with an OFFSET (the second selection would skip other rows)")
	}
	if hasClause(clauses, "ORDER") && hasClause(clauses, "LIMIT") && twoStepErr == nil {
		// The DELETE restricted to the token finds the rows the holder stamped before
		// too; its ORDER BY … LIMIT takes such a row instead of one the fencing UPDATE
		// stamped when that UPDATE moved its rows in the order (a trigger or an ON
		// UPDATE column maintaining updated_at) or a tie is broken the other way
		// (red-team rt14c F2): the wrong row deleted. Without an ORDER BY any matching
		// rows are the statement's answer.
		twoStepErr = unsupported(g.String(), "%s", orderLimitDeleteTwoStatements)
	}

	// 1. The fencing UPDATE over the same rows: it fails the whole statement (and so
	//    the DELETE) if any targeted row carries a newer token, and stamps our token on
	//    the others, which stay locked until the transaction ends.
	prePlan := p.deleteFencing(g, nUser, tableStart, clauses, j, versioned, "")

	// 2. The DELETE, restricted to rows that now carry our token.
	main, err := p.deleteRestricted(g, nUser, clauses, j, "")
	if err != nil {
		return nil, err
	}
	main.Pre = prePlan
	main.TwoStepErr = twoStepErr
	main.Returns = hasClause(clauses, "RETURNING")
	switch {
	case p.rw.syn == sqllex.MySQL:
		err = p.keyDelete(main, g, nUser, r, tableStart, clauses, j, versioned, unstableErr)
	case p.rw.numbered:
		err = p.locatorDelete(main, g, nUser, r, tableStart, clauses, j, versioned, unstableErr, byCtid)
	case p.rw.syn == sqllex.SQLite:
		err = p.locatorDelete(main, g, nUser, r, tableStart, clauses, j, versioned, unstableErr, byRowid)
	}
	if err != nil {
		return nil, err
	}
	if !versioned && p.rw.deleteFence != nil && p.returningLast(clauses, k) {
		main.One = p.oneStepDelete(g, nUser, clauses, j, k)
	}
	return main, nil
}

// deleteFencing writes the fencing UPDATE of a DELETE of g: the table as the DELETE
// names it (sig[tableStart:j]), the fencing assignments, and the DELETE's WHERE, ORDER BY
// and LIMIT. keyQual, when not "", makes it the keyed form (delete_keyed.go): its
// version's expression records each stamped row's key, of the table as keyQual names it.
func (p *parser) deleteFencing(g *Table, nUser, tableStart int, clauses map[string][2]int, j int, versioned bool, keyQual string) *Plan {
	pre := p.newBuilder(nUser)
	pre.recording = keyQual != ""
	pre.write("UPDATE ")
	pre.copy(p.sig[tableStart].Start, p.endOf(j))
	pre.write(" SET ")
	pre.assignments(g, "", versioned)
	for _, kw := range []string{"WHERE", "ORDER", "LIMIT"} {
		if c, ok := clauses[kw]; ok {
			pre.write(" ")
			pre.copy(p.sig[c[0]].Start, p.endOf(c[1]))
		}
	}
	if keyQual != "" {
		return pre.finishKeyed(KindUpdate, g, keyQual)
	}
	return pre.finish(KindUpdate, g)
}

// deleteRestricted writes the DELETE of a two-statement DELETE of g: the caller's
// DELETE restricted to the rows carrying the token (its WHERE ANDed with the token
// column = the token, or a WHERE added after the table, sig[:j]) and, keyed
// (keyQual not ""), to the rows its fencing UPDATE recorded (delete_keyed.go).
func (p *parser) deleteRestricted(g *Table, nUser int, clauses map[string][2]int, j int, keyQual string) (*Plan, error) {
	k := byToken
	if keyQual != "" {
		k = byKey
	}
	return p.deleteRestrictedBy(g, nUser, clauses, j, keyQual, k)
}

// keying is how a two-statement DELETE names the rows its fencing UPDATE stamped
// (delete_keyed.go).
type keying uint8

const (
	byToken   keying = iota // the token only: every row carrying it
	byKey                   // MySQL/MariaDB: the primary keys the UPDATE recorded in the session
	byCtid                  // PostgreSQL: the ctids the UPDATE recorded in ClaimedSetting
	byRowid                 // SQLite: the rowids the UPDATE returned, bound as ArgStamped
	byKeyList               // MySQL/MariaDB: the keys the UPDATE recorded, bound as ArgKeyItem
)

// deleteRestrictedBy is deleteRestricted, the rows named as k says, of the table as
// keyQual names it.
func (p *parser) deleteRestrictedBy(g *Table, nUser int, clauses map[string][2]int, j int, keyQual string, k keying) (*Plan, error) {
	b := p.newBuilder(nUser)
	restrict := func() {
		switch k {
		case byCtid:
			b.write(claimedRows(keyQual) + " AND ")
		case byRowid:
			b.write(keyQual + "._rowid_ IN (SELECT value FROM json_each(")
			b.placeholder("?", ArgStamped)
			b.write(")) AND ")
		case byKey:
			b.claimedKeys()
		case byKeyList:
			b.keySlot()
			b.write(" IN (")
			b.listAt, b.listArg = b.sb.Len(), len(b.refs)
			b.write(") AND ")
		}
		b.write(g.QTok + " = ")
		b.token()
	}
	if w, ok := clauses["WHERE"]; ok {
		if w[0]+1 >= w[1] {
			return nil, unsupported(g.String(), "DELETE with an empty WHERE")
		}
		if p.punct(w[0]+1, ".") {
			// "WHERE.5 …": the parenthesis the rewrite inserts would change how the
			// condition's first token reads ("(.5" is a number).
			return nil, unsupported(g.String(), "a DELETE whose WHERE is glued to a '.'")
		}
		exprStart, exprEnd := p.sig[w[0]+1].Start, p.endOf(w[1])
		b.copy(0, exprStart)
		b.write("(")
		b.copy(exprStart, exprEnd)
		b.write(") AND ")
		restrict()
		b.gap(exprEnd)
		b.copy(exprEnd, len(p.src))
	} else {
		at := p.endOf(j)
		b.copy(0, at)
		b.write(" WHERE ")
		restrict()
		b.gap(at)
		b.copy(at, len(p.src))
	}
	if k == byKey || k == byKeyList {
		return b.finishKeyed(KindDelete, g, keyQual), nil
	}
	return b.finish(KindDelete, g), nil
}

// returningLast reports whether a DELETE's RETURNING clause, if it has one, holds a
// list and is its last clause (it ends at end, the sig index where the clauses end):
// the one-statement form then appends the dialect's check to the caller's list
// (oneStepDelete), and the wrapper hides that column from the caller (Plan.Hidden).
func (p *parser) returningLast(clauses map[string][2]int, end int) bool {
	c, ok := clauses["RETURNING"]
	return !ok || (c[1] == end && c[1] > c[0]+1)
}

// orderLimitDeleteTwoStatements is why a DELETE with ORDER BY … LIMIT cannot run as
// the two statements (Plan.TwoStepErr).
const orderLimitDeleteTwoStatements = "a DELETE with ORDER BY … LIMIT run as two statements (no database-side guard to take it in one, ExpectVersion, or the schema checks off): the DELETE after the fencing UPDATE is restricted to the rows carrying the token, which include rows the same holder stamped before, and takes such a row instead of the one the statement selects when the UPDATE changes the order (a trigger or an ON UPDATE column) or a tie is broken the other way; install the guard (the DELETE then runs as one statement) or delete by key"

// oneStepDelete builds the one-statement form of a DELETE of g (Plan.One): the
// caller's DELETE with the dialect's mark ANDed to its condition and its check (if it
// has one) as the RETURNING list (dialect.DeleteFencer), or appended to the caller's
// RETURNING list as its last column, which the wrapper hides (Plan.Hidden): the
// caller gets its own columns, of the rows as they were stored when deleted. Without a
// check the mark is the fence, and the form exists only for a plain condition
// (plainCondition). j is the sig index after the table and its alias, end the sig
// index where the DELETE's clauses end (len(sig) or its ';').
func (p *parser) oneStepDelete(g *Table, nUser int, clauses map[string][2]int, j, end int) *Plan {
	mark, check := p.rw.deleteFence(g.Schema, g.Name, g.TokenCol)
	if w, ok := clauses["WHERE"]; check == "" && ok && !p.plainCondition(w[0]+1, w[1]) {
		return nil
	}
	b := p.newBuilder(nUser)
	stop := p.endOf(end) // RETURNING goes after the last clause, before a ';' or comment
	if w, ok := clauses["WHERE"]; ok {
		exprStart, exprEnd := p.sig[w[0]+1].Start, p.endOf(w[1])
		b.copy(0, exprStart)
		b.write("(")
		b.copy(exprStart, exprEnd)
		b.write(") AND ")
		b.slots(mark)
		b.gap(exprEnd)
		b.copy(exprEnd, stop)
	} else {
		at := p.endOf(j)
		b.copy(0, at)
		b.write(" WHERE ")
		b.slots(mark)
		b.gap(at)
		b.copy(at, stop)
	}
	_, returning := clauses["RETURNING"]
	if check != "" {
		if returning {
			b.write(", ") // after the caller's list, the clause's last item
		} else {
			b.write(" RETURNING ")
		}
		b.slots(check)
	}
	b.copy(stop, len(p.src))
	one := b.finish(KindDelete, g)
	if returning && check != "" {
		one.Hidden = 1
	}
	return one
}
