package plan

import "strings"

// Fenced reads. A new holder that only reads a row before an old holder's late write
// lands would compute its update from a value about to change, and its newer write
// would then erase the late one. In a statement that carries a token, SELECT … FOR
// UPDATE (or FOR NO KEY UPDATE, FOR SHARE, FOR KEY SHARE, LOCK IN SHARE MODE: the claim
// takes the rows' write locks) on a guarded table therefore claims the rows it locks
// before returning them: a fencing UPDATE over the same rows stamps the token (and
// advances the version), or fails with ErrFenced if a newer token already owns one of
// them. From then on the database refuses the old holder's late write. Without a token
// the statement is an ordinary locking read. Plain SELECTs never claim: a read that
// does not lock is not a promise to write.

// lockingRead plans a SELECT at sig[p.start]: a locking read of a guarded table becomes
// a claim; anything else passes. with is the sig index of the WITH list before it, or
// -1: PostgreSQL's claim runs under the same list; MySQL's UPDATE takes none, so the
// WITH form is refused there.
func (p *parser) lockingRead(with int) (*Plan, error) {
	p.readPlanned = true
	lock := p.lockClause()
	if !p.mayNameGuard() {
		return p.pass(), nil
	}
	if lock < 0 {
		if at := p.anyLock(0, len(p.sig)); at >= 0 {
			return p.claimRefused(p.firstGuard(), "%s (%s) in a statement that names a guarded table: it cannot be claimed exactly; lock the guarded table's rows with a single-table SELECT … FOR UPDATE", lockedWhat("SELECT"), p.lockText(at))
		}
		return p.pass(), nil
	}
	if at := p.nestedLock(0, len(p.sig)); at >= 0 {
		return p.claimRefused(p.firstGuard(), "a locking SELECT that holds another locking read (%s) in a subquery or WITH list", p.lockText(at))
	}
	if into := p.intoAt(p.start, len(p.sig)); into >= 0 {
		return p.claimRefused(p.firstGuard(), "a locking SELECT … INTO (variables, a table or a file): it returns no rows, so the wrapper cannot check that its claim stamped exactly the rows it read; select the rows with SELECT … %s and assign them in the application", p.lockText(lock))
	}
	from := p.selectFrom(p.start)
	at := from + 1
	if p.rw.numbered && p.kw(at, "ONLY") {
		at++ // PostgreSQL's FROM ONLY: the claim keeps it (UPDATE ONLY …)
	}
	r, ok := p.parseTarget(at) // also ONLY ( name ) (red-team rt34c F4)
	r.first = from + 1
	if !ok {
		return p.claimRefused(p.firstGuard(), "a locking SELECT whose FROM is not a plain table")
	}
	p.descendants(&r) // name *: the table and its descendants, as a name alone
	p.parseAlias(&r, "WHERE", "ORDER", "LIMIT", "OFFSET", "FOR", "GROUP", "HAVING", "WINDOW",
		"JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "STRAIGHT_JOIN", "UNION",
		"INTERSECT", "EXCEPT", "LOCK", "USE", "FORCE", "IGNORE", "PARTITION", "TABLESAMPLE")
	g := p.rw.Lookup(r.parts)
	j := r.aliasEnd
	clauses, rest := p.readClauses(j, "WHERE", "ORDER", "LIMIT", "OFFSET")
	if g != nil && p.indexHints(j) != j {
		return p.claimRefused(g.String(), "a locking SELECT with an index hint (USE, FORCE or IGNORE INDEX): the claim's UPDATE, which stamps the rows, might select others; lock the rows without the hint")
	}
	if rest != lock {
		if g == nil && !p.mentionsGuardIn(from, lock) || p.locksOnlyUnguarded(lock, with) {
			return p.pass(), nil
		}
		if p.forSystemTime(from, lock) {
			return p.claimRefused(p.guardName(g), systemTimeClaim)
		}
		return p.claimRefused(p.guardName(g), "a locking SELECT over a join, grouping or set operation that reads a guarded table (lock the guarded table's rows in a single-table SELECT … FOR UPDATE)")
	}
	if g == nil {
		return p.pass(), nil
	}
	if why := p.selectOnlyClause(r.aliasEnd, lock); why != "" {
		return p.claimRefused(g.String(), "a locking SELECT with %s, which the claim's UPDATE cannot take; lock the rows with a plain SELECT … FOR UPDATE", why)
	}
	if name := p.lockOfOther(lock, r); name != "" {
		return p.claimRefused(g.String(), "%s OF %s, which is not the relation the SELECT reads (%s): lock the rows of the table in its FROM clause, named by its alias if it has one", p.lockText(lock), name, p.qualifier(r))
	}
	if why := p.collapsingSelect(p.start+1, from); why != "" {
		return p.claimRefused(g.String(), "a locking SELECT whose select list has %s: its rows are not the rows it locks, so the wrapper cannot check that its claim read exactly the rows it stamped; lock the rows with SELECT <columns> … FOR UPDATE and aggregate in the application", why)
	}
	if c, ok := clauses["ORDER"]; ok && !p.rw.numbered {
		// MySQL/MariaDB: an aggregate in the ORDER BY makes the read an aggregate
		// query as one in the select list does, and the claim's UPDATE cannot take it.
		if why := p.collapsingSelect(c[0]+2, c[1]); why != "" {
			return p.claimRefused(g.String(), "a locking SELECT whose ORDER BY has %s: it collapses the rows it reads into one, which are then not the rows it locks; lock the rows with SELECT <columns> … FOR UPDATE and aggregate in the application", why)
		}
	}
	var twoStepErr error // the two-statement form's refusal (Plan.TwoStepErr)
	if with >= 0 {
		if !p.rw.numbered {
			return p.claimRefused(g.String(), "a locking SELECT under a WITH list on MySQL/MariaDB (the claiming UPDATE cannot take the list)")
		}
		for _, n := range p.withNames(with, p.start) {
			if n == "\x00" || n == strings.ToLower(r.parts[len(r.parts)-1]) || p.rw.guards[p.rw.Key(n)] != nil {
				return p.claimRefused(g.String(), "a locking SELECT under a WITH list that defines a name of a guarded table")
			}
		}
		if why := p.unstableSelection(g, with+1, p.start); why != "" {
			twoStepErr = unsupported(g.String(), "a locking SELECT whose WITH list %s", why)
		}
	}
	if a, b := outOfOrder(clauses, "WHERE", "ORDER", "LIMIT", "OFFSET"); a != "" && !p.rw.numbered {
		// The claim copies the clauses in that order, with their positional placeholders.
		return p.claimRefused(g.String(), "a locking SELECT whose %s comes before its %s", b, a)
	}
	nowait, why := p.unclaimableLock(lock)
	if why == "" {
		why = p.lockNotTaken(lock)
	}
	if why == "" {
		why = p.lockTail(lock) // never a text dropped after the clause (rt65a F4)
	}
	if why != "" {
		return p.claimRefused(g.String(), "%s", why)
	}
	if at := p.stopAt(from, lock, "FETCH"); at < lock && p.kw(at, "FETCH") {
		// FETCH FIRST n ROWS (ONLY, WITH TIES) is a window the claim does not read as
		// one: it would be copied as part of the ORDER BY.
		return p.claimRefused(g.String(), "a locking SELECT with FETCH FIRST/NEXT: write LIMIT n instead")
	}
	// The two-statement claim's read selects its rows again after the claim: a
	// selection that could find other rows the second time refuses that form
	// (TwoStepErr); the one-statement claim selects once.
	for _, kw := range []string{"WHERE", "ORDER"} {
		if c, ok := clauses[kw]; ok && twoStepErr == nil {
			if why := p.unstableSelection(g, c[0]+1, c[1]); why != "" {
				twoStepErr = unsupported(g.String(), "a locking SELECT whose %s %s", kw, why)
			}
		}
	}
	sel, calcFound := p.selectList(p.start+1, from)
	if c, ok := clauses["ORDER"]; ok && (hasClause(clauses, "LIMIT") || hasClause(clauses, "OFFSET")) {
		if why := p.orderByOutput([2]int{sel, from}, c); why != "" {
			return p.claimRefused(g.String(), "a locking SELECT that %s", why)
		}
	}
	// selection: the clauses that select the claim's rows. Without a LIMIT or OFFSET
	// an ORDER BY picks no row, only an order: one the claim's selection cannot read
	// (an output name or a select-list position, which the server refused or read as
	// a column) is left out of it, and kept by the read.
	selection := clauses
	if c, ok := clauses["ORDER"]; ok && !hasClause(clauses, "LIMIT") && !hasClause(clauses, "OFFSET") && p.orderByOutput([2]int{sel, from}, c) != "" {
		selection = map[string][2]int{}
		for kw, c := range clauses {
			if kw != "ORDER" {
				selection[kw] = c
			}
		}
	}
	if !p.rw.numbered && hasClause(clauses, "LIMIT") {
		// The claim's read is the caller's SELECT restricted to the rows its UPDATE
		// stamped, the LIMIT's: what MariaDB computes over every row the WHERE selects,
		// before the LIMIT, would be computed over those alone. (PostgreSQL refuses a
		// window function in a locking read itself.)
		if calcFound {
			return p.claimRefused(g.String(), "a locking SELECT SQL_CALC_FOUND_ROWS with a LIMIT: the claim reads only the rows it stamped, so FOUND_ROWS() would count those, not the rows the statement selects; count them with a separate SELECT COUNT(*)")
		}
		order, ordered := clauses["ORDER"]
		if p.windowCall(sel, from) >= 0 || ordered && p.windowCall(order[0], order[1]) >= 0 {
			return p.claimRefused(g.String(), "a locking SELECT with a LIMIT that calls a window function (… OVER): the claim reads only the rows it stamped, so the window would be computed over those, not over the rows the statement selects; compute it in a separate SELECT")
		}
	}
	nUser, err := p.checkParams(g)
	if err != nil {
		return nil, err
	}
	b := p.newBuilder(nUser)
	b.compact = true
	located := p.rw.numbered && locatorClaim(selection, nowait)
	if located && p.namesClaimQuery() {
		return p.claimRefused(g.String(), "a locking SELECT with ORDER BY, LIMIT, OFFSET or NOWAIT that uses the name %s or %s, which its claim gives its own WITH queries", claimedName, lockedName)
	}
	switch {
	case with >= 0 && located:
		b.copy(p.sig[with].Start, p.endOf(p.start))
		b.write(", ")
	case with >= 0:
		b.copy(p.sig[with].Start, p.endOf(p.start))
		b.write(" ")
	case located:
		b.write("WITH ")
	}
	_, ordered := selection["ORDER"]
	_, limited := clauses["LIMIT"]
	_, offset := clauses["OFFSET"]
	switch {
	case !ordered && !limited && !offset && !nowait:
		p.claimUpdate(b, g, r, selection, "WHERE")
	case located:
		// PostgreSQL's UPDATE has no ORDER BY/LIMIT and no NOWAIT: claim the rows the
		// same locking query locks (with the caller's NOWAIT), by their row locator
		// (claimByLocator). Its outer SELECT returns a row per row stamped, counted by
		// the command tag as an UPDATE's rows are.
		p.claimLocated(b, g, r, selection, p.locksForUpdate(lock), nowait, "ctid")
		b.write(" SELECT FROM " + claimedName + " WHERE " + claimRecordCheck)
	case nowait:
		return p.claimRefused(g.String(), "SELECT … FOR UPDATE NOWAIT on MySQL/MariaDB (the claiming UPDATE cannot keep the wait policy)")
	default:
		if offset || p.limitHasOffset(clauses["LIMIT"]) {
			return p.claimRefused(g.String(), "a locking SELECT with an OFFSET (MySQL's UPDATE cannot skip rows)")
		}
		p.claimUpdate(b, g, r, selection, "WHERE", "ORDER", "LIMIT")
	}
	pre := b.finish(KindUpdate, g)
	pre.ConflictChecked = located
	// A LIMIT, or a selection by the statement's clock, can take other rows carrying
	// the token in the read (claim_keyed.go, clockSelection): keyed.
	// Every MySQL/MariaDB claim is keyed where its table has a primary key: a read
	// restricted by the token alone also finds rows the holder stamped before, and
	// whatever makes its selection differ from the UPDATE's (a function or view reading
	// the clock, an aggregate over a column the UPDATE changes) can swap one in.
	// keyRequired: a LIMIT, or a selection by the statement's clock (clockSelection),
	// which are known to swap rows, refuse a table without a primary key.
	keyed := !p.rw.numbered
	clock := false
	for _, kw := range []string{"WHERE", "ORDER"} {
		if c, ok := clauses[kw]; ok && keyed && p.clockSelection(c[0]+1, c[1]) != "" {
			clock = true
		}
	}
	keyRequired := keyed && (limited || clock)
	if keyed && p.namesUserVariable() {
		// The keyed statements keep their record in session variables; a user variable
		// may be one of them under any spelling (@`x`, @'x' with escapes, any case).
		return p.claimRefused(g.String(), "a locking SELECT on MySQL/MariaDB that names a user variable (@name): its claim keeps the rows it stamped in %s and %s; pass the value as an argument", claimListVar, claimNonceVar)
	}
	if keyed {
		kb := p.newBuilder(nUser)
		kb.recording = true
		p.claimUpdate(kb, g, r, selection, "WHERE", "ORDER", "LIMIT")
		pre.Keyed = kb.finishKeyed(KindUpdate, g, p.qualifier(r))
	}
	plainLocated := p.rw.numbered && !located && !p.namesClaimQuery()
	if plainLocated {
		pre.Keyed = p.claimLocatedPlain(g, r, selection, with, nUser)
	}
	main := &Plan{Kind: KindClaim, Guard: g, SQL: p.src, NUser: nUser, Pre: pre}
	main.KeyRequired = keyRequired
	if c, ok := clauses["WHERE"]; ok && keyed && !clock {
		// A selection by the statement's clock can add in the read the row the UPDATE
		// did not find (a lock wait between them): keyed, that read returns nothing.
		main.Point = p.pointTerms(c[0]+1, c[1])
	}
	if c, ok := clauses["WHERE"]; ok {
		main.Absent = p.keyTerms(c[0]+1, c[1])
		if len(main.Absent) > 0 {
			main.absentConjuncts = len(p.conjuncts(c[0]+1, c[1], !p.rw.numbered))
		}
		main.absentMySQL = !p.rw.numbered
	}
	main.NoWait = nowait
	main.ClaimLocator = located
	main.TwoStepErr = twoStepErr
	// The one-statement claim by row locator evaluates the selection more than once
	// too (claimByLocator's two locator queries): it keeps a selection that may find
	// other rows the second time to no form at all.
	if p.rw.numbered && (twoStepErr == nil || !main.ClaimLocator) {
		main.ClaimOne = p.claimOne(claimShape{g: g, r: r, with: with, from: from, lock: lock, clauses: selection, read: clauses, nowait: nowait, nUser: nUser})
	}
	if twoStepErr != nil && main.ClaimOne == nil {
		return &Plan{Kind: KindClaim, SQL: p.src, NUser: -1, ClaimErr: twoStepErr}, nil
	}
	if !offset {
		main.ClaimRead = p.claimRead(g, r, clauses, nUser, located, false)
		if keyed {
			main.ClaimRead.Keyed = p.claimRead(g, r, clauses, nUser, false, true)
		}
		if plainLocated {
			main.ClaimRead.Keyed = p.claimRead(g, r, clauses, nUser, true, false)
			main.ClaimRead.Keyed.ClaimLocator = true
		}
	} else if main.ClaimOne == nil {
		return p.claimRefused(g.String(), "%s", OffsetTwoStatements)
	}
	markClaimParts(main)
	return main, nil
}

// markClaimParts marks the statements claim sends (Plan.ClaimPart), each with the
// claim's NoWait.
func markClaimParts(claim *Plan) {
	for _, st := range []*Plan{claim.Pre, claim.ClaimOne, claim.ClaimRead} {
		for ; st != nil; st = st.Keyed {
			st.ClaimPart, st.NoWait = true, claim.NoWait
		}
	}
}

// selectModifiers are the words MySQL/MariaDB take between SELECT and its select list.
// PostgreSQL takes ALL and DISTINCT there; a DISTINCT read is refused (collapsingSelect).
var selectModifiers = []string{"ALL", "DISTINCT", "DISTINCTROW", "HIGH_PRIORITY", "STRAIGHT_JOIN",
	"SQL_SMALL_RESULT", "SQL_BIG_RESULT", "SQL_BUFFER_RESULT", "SQL_CACHE", "SQL_NO_CACHE", "SQL_CALC_FOUND_ROWS"}

// selectList returns the sig index of the first item of the select list that starts at
// sig[from] (before to, the FROM), after the select modifiers (MySQL/MariaDB's
// selectModifiers, which the server reads as modifiers there even where a column of
// that name exists; PostgreSQL's ALL), and whether they hold SQL_CALC_FOUND_ROWS.
func (p *parser) selectList(from, to int) (first int, calcFound bool) {
	for first = from; first < to; first++ {
		switch {
		case p.rw.numbered && p.kw(first, "ALL"):
		case !p.rw.numbered && p.kwIn(first, selectModifiers...):
			calcFound = calcFound || p.kw(first, "SQL_CALC_FOUND_ROWS")
		default:
			return first, calcFound
		}
	}
	return first, calcFound
}

// windowCall returns the sig index of the first window call (a ')' followed by OVER, at
// any depth) in sig[from:to], or -1.
func (p *parser) windowCall(from, to int) int {
	for k := from + 1; k < to; k++ {
		if p.kw(k, "OVER") && p.punct(k-1, ")") {
			return k
		}
	}
	return -1
}

// selectOnlyClause names a top-level clause in sig[from:to] (the clauses after a locking
// read's table, before its locking clause) that a SELECT takes and the claim's UPDATE,
// which copies the read's WHERE, ORDER BY and LIMIT, cannot: GROUP BY, HAVING (MariaDB
// takes it without GROUP BY), a WINDOW clause, a set operation, MariaDB's LIMIT … ROWS
// EXAMINED and MySQL's PROCEDURE; or returns "".
func (p *parser) selectOnlyClause(from, to int) string {
	depth := 0
	for k := from; k < to && k < len(p.sig); k++ {
		switch {
		case p.punct(k, "("):
			depth++
		case p.punct(k, ")"):
			depth--
		case depth != 0:
		case p.kw(k, "GROUP") && p.kw(k+1, "BY"):
			return "GROUP BY"
		case p.kw(k, "HAVING"):
			return "HAVING"
		case p.kw(k, "WINDOW") && (p.rw.numbered || p.isIdent(k+1) && p.kw(k+2, "AS")):
			return "a WINDOW clause"
		case p.kwIn(k, "UNION", "INTERSECT", "EXCEPT"):
			return strings.ToUpper(p.text(p.sig[k]))
		case !p.rw.numbered && p.kw(k, "ROWS") && p.kw(k+1, "EXAMINED"):
			return "LIMIT … ROWS EXAMINED"
		case !p.rw.numbered && p.kw(k, "PROCEDURE"):
			return "PROCEDURE"
		}
	}
	return ""
}

// lockOfOther returns a name the OF list of the locking clause at sig[lock] holds that
// is not the relation the read's single table r is named by in the statement (its
// alias, else its name), as written, or "". The server refuses such a list (PostgreSQL:
// the relation is not in the FROM clause); the claim, which locks r's rows, would not.
func (p *parser) lockOfOther(lock int, r tableRef) string {
	at := lock + p.lockLen(lock)
	if !p.kw(at, "OF") {
		return ""
	}
	q := r.end - 1
	if r.alias != "" {
		q = r.aliasEnd - 1
	}
	want := p.foldedAt(q)
	for k := at + 1; k < len(p.sig); k += 2 {
		if !p.isIdent(k) || p.punct(k+1, ".") || want == "" || p.foldedAt(k) != want {
			end := k
			for end < len(p.sig) && !p.punct(end, ",") && !p.kwIn(end, "NOWAIT", "SKIP", "WAIT") && !p.punct(end, ";") && p.lockLen(end) == 0 {
				end++
			}
			if end == k {
				return "(nothing)"
			}
			return p.src[p.sig[k].Start:p.sig[end-1].End]
		}
		if !p.punct(k+1, ",") {
			return ""
		}
	}
	return ""
}

// OffsetTwoStatements is why a locking read with an OFFSET cannot be claimed in two
// statements (claimRead): the planner's refusal when the read has no one-statement
// form, the wrapper's when the table keeps it from running one.
const OffsetTwoStatements = "a locking SELECT with an OFFSET whose claim cannot run as one statement (the read after the claim is restricted to the rows carrying the token, which the OFFSET would skip): drop the OFFSET, or select by key"

// claimRead writes the read of the two-statement claim: the caller's locking SELECT
// restricted to the rows that carry the token (its WHERE ANDed with the token column
// = the token) and, for a claim by locator (located) or a keyed claim (keyed:
// claim_keyed.go), to the rows its claim stamped (the token alone also finds rows the
// holder stamped before). The claiming UPDATE stamped its rows with exactly the token, and holds
// their locks: under READ COMMITTED the read, a statement of its own, would otherwise
// see rows committed between the two (a row that starts to match pushes a claimed one
// out of a LIMIT: the same count, another row, unclaimed). So every row returned
// carries the token, and the rows are counted against the rows stamped (the
// wrapper's exactness check). An OFFSET is not kept: it would skip claimed rows
// (OffsetTwoStatements).
func (p *parser) claimRead(g *Table, r tableRef, clauses map[string][2]int, nUser int, located, keyed bool) *Plan {
	b := p.newBuilder(nUser)
	b.copy(0, p.endOf(r.aliasEnd))
	restrict := func() {
		if located {
			b.write(claimedRows(p.qualifier(r)) + " AND ")
		}
		if keyed {
			b.claimedKeys()
		}
		b.write(p.qualifier(r) + "." + g.QTok + " = ")
		b.token()
	}
	rest := r.aliasEnd
	if c, ok := clauses["WHERE"]; ok {
		b.write(" WHERE (")
		if c[1] > c[0]+1 { // else a WHERE without a condition: the database's error
			b.copy(p.sig[c[0]+1].Start, p.endOf(c[1]))
		}
		b.write(") AND ")
		rest = c[1]
	} else {
		b.write(" WHERE ")
	}
	restrict()
	if rest < len(p.sig) {
		b.write(" ")
		b.copy(p.sig[rest].Start, len(p.src))
	}
	if keyed {
		return b.finishKeyed(KindClaim, g, p.qualifier(r))
	}
	return b.finish(KindClaim, g)
}

func hasClause(clauses map[string][2]int, kw string) bool {
	_, ok := clauses[kw]
	return ok
}

// copyTable copies the claimed table reference as written ([ONLY] name [[AS] alias]).
func (p *parser) copyTable(b *builder, r tableRef) {
	b.copy(p.sig[r.first].Start, p.endOf(r.aliasEnd))
}

// claimUpdate writes the claiming UPDATE of the table r over the rows the locking
// read selects with the clauses named: PostgreSQL's takes a WHERE only (a read with
// ORDER BY, LIMIT, OFFSET or NOWAIT is claimed by row locator, claimLocated), MySQL's
// WHERE, ORDER BY and LIMIT.
func (p *parser) claimUpdate(b *builder, g *Table, r tableRef, clauses map[string][2]int, words ...string) {
	b.write("UPDATE ")
	p.copyTable(b, r)
	b.write(" SET ")
	b.assignments(g, p.qualifier(r), false)
	p.copyClauses(b, clauses, words...)
}

// locatorClaim reports whether a PostgreSQL locking read with these clauses is claimed
// by row locator (claimByLocator): it has ORDER BY, LIMIT, OFFSET or NOWAIT, which
// PostgreSQL's UPDATE cannot take.
func locatorClaim(clauses map[string][2]int, nowait bool) bool {
	return nowait || hasClause(clauses, "ORDER") || hasClause(clauses, "LIMIT") || hasClause(clauses, "OFFSET")
}

// claimRefused is the plan of a locking read of a guarded table that cannot be claimed
// exactly: refused when it carries a token, a plain read when it does not.
func (p *parser) claimRefused(table, format string, args ...any) (*Plan, error) {
	return &Plan{Kind: KindClaim, SQL: p.src, NUser: -1, ClaimErr: unsupported(table, format, args...)}, nil
}

// lockClause returns the sig index of a top-level locking clause (lockLen) of the SELECT
// at sig[p.start], or -1.
func (p *parser) lockClause() int {
	depth := 0
	for i := p.start; i < len(p.sig); i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
		case depth == 0 && p.lockLen(i) > 0:
			return i
		}
	}
	return -1
}

// locksForUpdate reports whether the locking clause at sig[lock] is FOR UPDATE, the
// strongest row lock (PostgreSQL): stronger than the FOR NO KEY UPDATE a claim's own
// UPDATE takes, so its claim takes it besides (claimLockClause, claimUpdateLocking).
func (p *parser) locksForUpdate(lock int) bool {
	return p.lockLen(lock) == 2 && p.kw(lock+1, "UPDATE")
}

// unclaimableLock explains why the locking clause at sig[lock] cannot be claimed by an
// UPDATE over the same rows, or returns ""; nowait reports a NOWAIT to keep.
func (p *parser) unclaimableLock(lock int) (nowait bool, why string) {
	for i := lock; i < len(p.sig) && !p.punct(i, ";"); i++ {
		switch {
		case p.kw(i, "SKIP"):
			return false, "SELECT … FOR UPDATE SKIP LOCKED (the read could return a row freed after the claim, unclaimed)"
		case p.kw(i, "NOWAIT"):
			nowait = true
		case p.kw(i, "WAIT"):
			return false, "SELECT … FOR UPDATE WAIT n (the claim cannot keep the wait policy)"
		case p.kwIn(i, "LIMIT", "OFFSET", "FETCH"):
			return false, "a LIMIT, OFFSET or FETCH after the locking clause (the claim would not apply it): write it before FOR UPDATE"
		case p.kw(i, "OF"):
			// FOR UPDATE OF t: one table only, which is the one claimed.
		case i > lock && p.lockLen(i) > 0:
			return false, "a SELECT with several locking clauses"
		}
	}
	return nowait, ""
}

// readClauses reads the clauses named by words from sig[i] on, each up to the next; it
// returns them by keyword ([start, end) sig indexes) and the index where it stopped.
func (p *parser) readClauses(i int, words ...string) (map[string][2]int, int) {
	out := map[string][2]int{}
	for i < len(p.sig) {
		kw := ""
		for _, w := range words {
			if p.kw(i, w) {
				kw = w
			}
		}
		if _, dup := out[kw]; kw == "" || dup {
			return out, i
		}
		end := p.clauseEnd(i+1, append(words, "FOR", "LOCK", "RETURNING")...)
		out[kw] = [2]int{i, end}
		i = end
	}
	return out, i
}

// outOfOrder returns two of the named clauses that stand in the other order than given
// (a should come before b), or "", "".
func outOfOrder(clauses map[string][2]int, order ...string) (a, b string) {
	for i, x := range order {
		for _, y := range order[i+1:] {
			cx, okX := clauses[x]
			cy, okY := clauses[y]
			if okX && okY && cy[0] < cx[0] {
				return x, y
			}
		}
	}
	return "", ""
}

// copyClauses appends the named clauses that are present, in the order given.
func (p *parser) copyClauses(b *builder, clauses map[string][2]int, words ...string) {
	for _, w := range words {
		if c, ok := clauses[w]; ok {
			b.write(" ")
			b.copy(p.sig[c[0]].Start, p.endOf(c[1]))
		}
	}
}

// limitHasOffset reports MySQL's LIMIT offset, count or LIMIT … OFFSET ….
func (p *parser) limitHasOffset(c [2]int) bool {
	for i := c[0] + 1; i < c[1]; i++ {
		if p.punct(i, ",") || p.kw(i, "OFFSET") {
			return true
		}
	}
	return false
}
