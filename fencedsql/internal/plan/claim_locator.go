package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// claimByLocator: PostgreSQL's claim of a locking read with ORDER BY, LIMIT, OFFSET or
// NOWAIT stamps the rows the same locking query locks, found by ctid:
//
//	fencedsql_locked AS (SELECT ARRAY(SELECT ctid … FOR <strength>) AS l, ARRAY(SELECT ctid …) AS u),
//	fencedsql_claimed AS (UPDATE t SET …
//	    WHERE ctid = ANY(<l || u>) AND (ctid = ANY(<l || u>)) IS TRUE
//	    RETURNING …)
//	SELECT … FROM fencedsql_claimed WHERE <as many rows stamped as locked>
//
// where <l || u> is (SELECT l || u FROM fencedsql_locked): the locked rows' ctids, then
// the unlocked query's, and <strength> the read's own lock strength but never weaker
// than FOR NO KEY UPDATE, the lock the UPDATE takes (claimLockClause), with the read's
// NOWAIT. The locking query runs once (the first of the two) and,
// under READ COMMITTED, waits for the rows another transaction is changing; it then
// re-checks its WHERE on their newest versions and returns the ctids of the versions
// it locked. The UPDATE's scan reaches only versions its snapshot sees: a locked row
// unchanged since the snapshot by its own ctid, a row changed and committed meanwhile
// by its old version's ctid, which the unlocked query (same snapshot) gives when the
// snapshot's window held it. The condition passes the old version at the scan, and
// PostgreSQL re-evaluates it (the IS TRUE copy, which the TID scan does not consume)
// on the newest version, whose ctid is among the locked ones exactly when the locking
// query kept the row; a newest version is never among the unlocked ctids, which the
// snapshot sees. An unchanged row of the unlocked window is among the locked rows too:
// the locking query examines the snapshot's rows in the same order, keeps every
// unchanged one, and stops only after as many rows as the window holds. So the UPDATE
// stamps only locked rows. "The same order" holds because a window's ORDER BY is made
// total in every list the claim runs, with ctid last (a snapshot's ctids are
// distinct): the two queries are planned apart — under the lock PostgreSQL sorts the
// whole selection, without it a top-N sort or an index may serve — and would otherwise
// break ties differently (red-team rt14c: a claim over tied rows stamped a row its
// locking query never took). A window without ORDER BY is ordered by ctid alone.
//
// With an OFFSET that is not so: when a row of the skipped prefix leaves, the locking
// query's window moves on by one, and an unchanged row at the snapshot window's start
// now falls in the prefix — locked, skipped, not the caller's. The unlocked list then
// leaves out the rows the locking query kept in its prefix: a second locking query,
// the same limited to the offset (inside fencedsql_locked's u), which waits for nothing (the
// first holds every row it examined with the same strength, which conflicts with every
// update and delete, so their newest versions cannot change, and another transaction
// can hold only locks that strength does not conflict with) and so keeps the same rows.
//
// The UPDATE can also stamp fewer rows than were locked: a locked row whose old
// version the snapshot's window did not hold (a row that entered the window as
// another left it, both changed by the transaction the claim waited for) is out of
// its reach. The outer SELECT's condition then fails the statement whole, with an
// error whose text starts with ClaimConflictMark (a cast of that text to
// boolean, 22P02, which the dialect classifies as dialect.ErrorClaimConflict): the
// claim returns, stamps and holds exactly the rows the locking query locked, or fails,
// stamping nothing, with the caller's transaction aborted; a retry claims the window
// as it then is. REPEATABLE READ and SERIALIZABLE fail such a claim with a
// serialization failure (40001) before the check.

// ClaimConflictMark starts the text of the error a claim by row locator raises when it
// stamped fewer rows than it locked. It is dialect.ClaimConflictMark, which the
// dialect's Classify recognises; the planner names no dialect package, so the two are
// kept equal by a test (fencedsql: TestClaimConflictMarkAgrees).
const ClaimConflictMark = "fencedsql_claim_conflict"

// lockedName names claimByLocator's WITH query of the locked rows' ctids. A statement
// that uses it (or claimedName) itself cannot be claimed by locator.
const lockedName = "fencedsql_locked"

// claimLocated writes claimByLocator's two WITH queries, after "WITH " or the caller's
// list and ", ": fencedsql_locked, then fencedsql_claimed, the UPDATE with RETURNING
// returning. Its locking queries lock as claimLockClause says (forUpdate: the read
// asked for FOR UPDATE; nowait: it asked not to wait).
func (p *parser) claimLocated(b *builder, g *Table, r tableRef, clauses map[string][2]int, forUpdate, nowait bool, returning string) {
	lock := claimLockClause(forUpdate, nowait)
	// A window (LIMIT, OFFSET) is ordered totally: by the caller's ORDER BY, then by
	// ctid, so that the locking query and the unlocked one, planned apart (a full sort
	// under the lock, a top-N sort or an index without it), break ties alike.
	windowed := hasClause(clauses, "LIMIT") || hasClause(clauses, "OFFSET")
	ordered := func() {
		p.copyClauses(b, clauses, "WHERE", "ORDER")
		switch {
		case !windowed:
		case hasClause(clauses, "ORDER"):
			b.write(", ctid")
		default:
			b.write(" ORDER BY ctid")
		}
	}
	sel := func(lock string) {
		b.write("ARRAY(SELECT ctid FROM ")
		p.copyTable(b, r)
		ordered()
		p.copyClauses(b, clauses, "LIMIT", "OFFSET")
		b.write(lock + ")")
	}
	b.write(lockedName + " AS (SELECT ")
	sel(lock)
	b.write(" AS l, ")
	if c, ok := clauses["OFFSET"]; ok {
		// The unlocked window without the rows the locking query kept before it (its
		// OFFSET skipped them: an unchanged row there is locked, not claimed). They are
		// the same query limited to the offset, locking: it waits for nothing (the
		// locking query holds every row it examined) and so keeps the same rows.
		end := c[1]
		if p.kw(end-1, "ROW") || p.kw(end-1, "ROWS") {
			end-- // OFFSET n ROWS
		}
		b.write("ARRAY(SELECT fencedsql_u FROM unnest(")
		sel("")
		b.write(") AS fencedsql_u WHERE fencedsql_u <> ALL(ARRAY(SELECT ctid FROM ")
		p.copyTable(b, r)
		ordered()
		// OFFSET NULL skips nothing; LIMIT NULL would lock every row.
		b.write(" LIMIT COALESCE((")
		b.copy(p.sig[c[0]+1].Start, p.endOf(end))
		b.write("), 0::bigint)" + lock + ")))")
	} else {
		sel("")
	}
	b.write(" AS u), " + claimedName + " AS (UPDATE ")
	p.copyTable(b, r)
	b.write(" SET ")
	b.assignments(g, p.qualifier(r), false)
	const member = "ctid = ANY((SELECT l || u FROM " + lockedName + ")::tid[])"
	b.write(" WHERE " + member + " AND (" + member + ") IS TRUE RETURNING " + returning + ")")
}

// claimLockClause is the locking clause of claimByLocator's locking queries: FOR
// UPDATE for a read FOR UPDATE, FOR NO KEY UPDATE for the weaker strengths (FOR NO KEY
// UPDATE, FOR SHARE, FOR KEY SHARE), with NOWAIT where the read asked for it. The
// claim's UPDATE changes no key column, so its own row lock is FOR NO KEY UPDATE. The
// locking query takes at least that: it conflicts with every update and delete, so
// the rows it locked keep the versions the UPDATE then stamps, and the UPDATE waits
// for no one after it (a weaker lock lets another transaction update a row FOR KEY
// SHARE holds, or lock one FOR SHARE, between the two: the UPDATE would find another
// version, or wait past a NOWAIT). It takes no more than the read asked for beyond
// that: FOR UPDATE for every strength blocked a concurrent insert of a row referencing
// a claimed one (its foreign-key check locks FOR KEY SHARE) that the plain read lets
// through, and failed such a read's NOWAIT (red-team rt37d F1).
func claimLockClause(forUpdate, nowait bool) string {
	lock := " FOR NO KEY UPDATE"
	if forUpdate {
		lock = " FOR UPDATE"
	}
	if nowait {
		lock += " NOWAIT"
	}
	return lock
}

// claimConflictCheck is the outer SELECT's condition of a claim by locator: true when
// the UPDATE stamped as many rows as the locking query locked (it stamps only locked
// rows), an error carrying ClaimConflictMark otherwise. It reads no column of
// the outer row, so PostgreSQL evaluates it once, before the first row, even when the
// claim stamped none. The cast's operand depends on the statement's values, so that
// the planner cannot evaluate it early.
const claimConflictCheck = "(SELECT CASE WHEN n = cardinality(l) THEN true ELSE " + claimConflictRaise +
	" END FROM " + lockedName + ", (SELECT count(*) AS n FROM " + claimedName + ") AS fencedsql_n)"

// claimRecordCheck is claimConflictCheck for the first of the two statements of a
// claim by locator (its UPDATE returns ctid): where the check passes it also records
// the ctids of the row versions the UPDATE wrote, in the transaction-local setting
// ClaimedSetting, which the read after it (claimRead) is restricted to. Evaluated
// once before the first row, it records an empty list when the claim stamped none.
const claimRecordCheck = "(SELECT CASE WHEN n = cardinality(l) THEN set_config('" + ClaimedSetting +
	"', c::text, true) IS NOT NULL ELSE " + claimConflictRaise + " END FROM " + lockedName +
	", (SELECT count(*) AS n, COALESCE(array_agg(ctid), '{}') AS c FROM " + claimedName + ") AS fencedsql_n)"

// claimConflictRaise is the ELSE branch of the checks: a cast of a text starting with
// ClaimConflictMark to boolean, which fails.
const claimConflictRaise = "CAST('" + ClaimConflictMark +
	": the claim stamped ' || n || ' of the ' || cardinality(l) || ' rows its locking read locked' AS boolean)"

// ClaimedSetting is the transaction-local setting (set_config(…, true)) in which the
// first statement of a two-statement claim by locator records the ctids of the rows it
// stamped (claimRecordCheck). The read after it is restricted to those rows, not to
// every row carrying the token: the holder's token is on rows it stamped before (an
// earlier statement or transaction), and when the claim's UPDATE moved its rows in the
// read's ORDER BY (a trigger maintaining updated_at, a tie broken by heap order), the
// read's LIMIT would take such an earlier row instead (red-team rt14c F2). The rows
// are locked by the claim, so their versions cannot change before the read.
const ClaimedSetting = "fencedsql.claimed"

// claimedRows is the condition that restricts the read of a two-statement claim by
// locator to the rows its claim recorded (ClaimedSetting). The setting is empty once a
// transaction that set it has ended, and missing in a session that never did: both
// select nothing.
func claimedRows(q string) string {
	return q + ".ctid = ANY(NULLIF(current_setting('" + ClaimedSetting + "', true), '')::tid[])"
}

// namesClaimQuery reports whether the statement uses a name the claim's WITH queries
// take (claimedName, lockedName): under the claim, it would read those instead.
func (p *parser) namesClaimQuery() bool {
	for i := range p.sig {
		if p.isIdent(i) {
			n, ok := p.ident(i)
			if !ok || strings.EqualFold(n, claimedName) || strings.EqualFold(n, lockedName) {
				return true
			}
		}
	}
	return false
}

// orderByOutput explains why the ORDER BY of a limited locking read cannot be copied
// into the claim's selection, or returns "". The claim selects rows with the read's
// ORDER BY and LIMIT/OFFSET but not its select list (the locator's SELECT ctid,
// MySQL's UPDATE … ORDER BY): an ORDER BY item that names a select-list position
// (ORDER BY 1, ORDER BY (1)) or an output name would order the claim's rows by
// something else, and the claim would stamp other rows than the read returns. Output
// names are the explicit ones (SELECT balance AS id … ORDER BY id; on MySQL/MariaDB
// also a string-literal alias, AS 'id', AS "id" or a bare 'id') and the implicit ones
// the database derives from an expression (id::text and CAST(id AS text) are named
// id, lower(x) is named lower; on MySQL/MariaDB a string literal item 'id' is named
// id): a bare name is refused unless the select list holds it as a plain column (id,
// t.id, *) or does not mention it at all. MySQL/MariaDB also resolve an output name
// inside an ORDER BY expression (x + 0, (SELECT x)), where the claim's UPDATE would
// read a column of that name or fail: an item that mentions an output name anywhere
// is refused there too. Names compare as outputName folds them. sel is the select
// list's sig range after its modifiers (selectList), order the ORDER clause's.
func (p *parser) orderByOutput(sel, order [2]int) string {
	outputs := p.outputNames(sel[0], sel[1])
	item := order[0] + 2 // after ORDER BY
	depth := 0
	for i := item; i <= order[1]; i++ {
		if i < order[1] {
			switch {
			case p.punct(i, "("), p.punct(i, "["):
				depth++
				continue
			case p.punct(i, ")"), p.punct(i, "]"):
				depth--
				continue
			case depth != 0 || !p.punct(i, ","):
				continue
			}
		}
		// sig[item:i] is one ORDER BY item: its head, then only ordering words.
		head := item
		for head < i && (head == item || !p.kwIn(head, "ASC", "DESC", "NULLS", "USING", "COLLATE")) {
			head++
		}
		a, z := item, head
		for z-a >= 3 && p.punct(a, "(") && p.matching(a) == z-1 {
			a, z = a+1, z-1 // ((id)) is id
		}
		what := ""
		if z == a+1 {
			switch name := p.outputName(a); {
			case p.sig[a].Kind == sqllex.KindNumber:
				what = "position"
			case p.isIdent(a) && (outputs[name] || outputs[undecodedName] || p.mayNameOutput(sel, name)):
				what = "output name"
			}
		}
		if what == "" && !p.rw.numbered && p.mentionsOutput(item, head, outputs) {
			what = "output name"
		}
		if what != "" {
			return "orders by a select-list " + what + " (" + p.src[p.sig[item].Start:p.sig[head-1].End] + ") before a LIMIT or OFFSET: the claim selects its rows without the select list; order by the expression itself"
		}
		item = i + 1
	}
	return ""
}

// mentionsOutput reports whether sig[from:to], an ORDER BY item of a MySQL/MariaDB
// locking read, names one of the outputs (an output name that cannot be decoded,
// undecodedName, any) at any depth: a name that is neither called (f(…)) nor
// qualified (t.x, which names the table's column).
func (p *parser) mentionsOutput(from, to int, outputs map[string]bool) bool {
	if len(outputs) == 0 {
		return false
	}
	for k := from; k < to; k++ {
		if !p.isIdent(k) || p.punct(k+1, "(") || p.punct(k+1, ".") || p.punct(k-1, ".") {
			continue
		}
		if outputs[undecodedName] || outputs[p.outputName(k)] {
			return true
		}
	}
	return false
}

// mayNameOutput reports whether the select list sig[sel[0]:sel[1]] mentions name other
// than as a plain column item (name, q.name): an expression over it (name::text,
// CAST(name AS …)) or a function of that name may give an output column the name,
// which an ORDER BY then means instead of the table's column.
func (p *parser) mayNameOutput(sel [2]int, name string) bool {
	mentioned, plain := false, false
	start, depth := sel[0], 0
	for k := sel[0]; k <= sel[1]; k++ {
		if k < sel[1] {
			switch {
			case p.punct(k, "("), p.punct(k, "["):
				depth++
			case p.punct(k, ")"), p.punct(k, "]"):
				depth--
			}
			if p.isIdent(k) && p.outputName(k) == name {
				mentioned = true
			}
			if depth != 0 || !p.punct(k, ",") {
				continue
			}
		}
		// sig[start:k] is one select-list item.
		switch {
		case k == start+1 && p.isIdent(start) && p.outputName(start) == name && !p.blankLed(start):
			plain = true
		case k == start+3 && p.isIdent(start) && p.punct(start+1, ".") && p.isIdent(start+2) && p.outputName(start+2) == name && !p.blankLed(start+2):
			plain = true
		}
		start = k + 1
	}
	return mentioned && !plain
}

// blankLed reports whether the MySQL/MariaDB name sig[i] starts with a blank that
// outputName drops (or cannot be decoded): as a column it is another name than the one
// its output column is compared by.
func (p *parser) blankLed(i int) bool {
	if p.rw.numbered {
		return false
	}
	n, ok := p.ident(i)
	return !ok || n != strings.TrimLeft(n, mysqlBlanks)
}

// outputNames returns the names the select list sig[from:to] gives its columns with AS
// or a bare alias, and on MySQL/MariaDB with a string literal (stringOutput), as
// outputName folds them. It also holds the names the server derives from an item
// without an alias that a bare ORDER BY name can mean (implicitOutputs).
func (p *parser) outputNames(from, to int) map[string]bool {
	out := map[string]bool{}
	p.implicitOutputs(from, to, out)
	depth := 0
	for i := from; i < to; i++ {
		switch {
		case p.punct(i, "("), p.punct(i, "["):
			depth++
		case p.punct(i, ")"), p.punct(i, "]"):
			depth--
		case depth != 0:
		case p.stringOutput(i, from, to):
			out[p.outputName(i)] = true
		case !p.isIdent(i):
		case p.kw(i-1, "AS") && i-1 >= from:
			out[p.outputName(i)] = true
		case i+1 == to || p.punct(i+1, ","):
			// the last word of an item: a bare alias unless it is the whole item or a
			// qualified column (x.col)
			if i > from && !p.punct(i-1, ",") && !p.punct(i-1, ".") {
				out[p.outputName(i)] = true
			}
		}
	}
	return out
}

// implicitOutputs adds to out the output names the server gives the items without an
// alias of the select list sig[from:to] that a bare ORDER BY name can mean other than
// a column of the table:
//   - MySQL/MariaDB name an expression by its text (ORDER BY `-balance` orders by the
//     item -balance): the text of each item of more than one token, lowercased;
//   - PostgreSQL names an item it cannot name otherwise "?column?", and names a scalar
//     subquery after the subquery's target and a composite's expansion ((f(x)).*)
//     after the composite's fields, which the text need not show
//     (unreadableOutput): such an item may name any output (undecodedName).
func (p *parser) implicitOutputs(from, to int, out map[string]bool) {
	if p.rw.numbered {
		out["?column?"] = true
	}
	start, depth := from, 0
	for k := from; k <= to; k++ {
		if k < to {
			switch {
			case p.punct(k, "("), p.punct(k, "["):
				depth++
			case p.punct(k, ")"), p.punct(k, "]"):
				depth--
			}
			if depth != 0 || !p.punct(k, ",") {
				continue
			}
		}
		// sig[start:k] is one select-list item.
		if !p.rw.numbered && k-start > 1 && p.literalsOnly(start, k) {
			// ('balance'), 'bal' 'ance', N'bal' 'ance': MariaDB names the item by
			// the literals' value (red-team rt26b F4), which may be any name.
			out[undecodedName] = true
		} else if k-start > 1 && !p.aliased(start, k) {
			if !p.rw.numbered {
				out[strings.ToLower(p.src[p.sig[start].Start:p.sig[k-1].End])] = true
			} else if p.unreadableOutput(start, k) {
				out[undecodedName] = true
			}
		}
		start = k + 1
	}
}

// literalsOnly reports whether the MySQL/MariaDB select-list item sig[from:to] holds
// only string literals (with an introducer right before one: N'…', _utf8mb4'…') and
// parentheses: MariaDB concatenates adjacent literals and names the item by their
// value.
func (p *parser) literalsOnly(from, to int) bool {
	str := false
	for k := from; k < to; k++ {
		switch {
		case p.sig[k].Kind == sqllex.KindString:
			str = true
		case p.punct(k, "("), p.punct(k, ")"):
		case p.sig[k].Kind == sqllex.KindWord && k+1 < to && p.sig[k+1].Kind == sqllex.KindString && p.sig[k].End == p.sig[k+1].Start:
		default:
			return false
		}
	}
	return str
}

// aliased reports whether the select-list item sig[from:to] ends with an alias: AS
// name, or a bare name after a word, a literal or a closing bracket (or, on
// MySQL/MariaDB, a string literal as stringOutput reads it). A name after an operator
// (x::int, -x) or a '.' is part of the expression.
func (p *parser) aliased(from, to int) bool {
	last := to - 1
	if last <= from {
		return false
	}
	if !p.rw.numbered && p.sig[last].Kind == sqllex.KindString {
		return p.kw(last-1, "AS") || p.stringOutput(last, from, to)
	}
	return p.isIdent(last) && (p.sig[last-1].Kind != sqllex.KindPunct || p.punct(last-1, ")") || p.punct(last-1, "]"))
}

// unreadableOutput reports whether the PostgreSQL select-list item sig[from:to] may
// take its output name from something its text does not show: a `*` that expands a
// relation or a composite inside it ((SELECT * FROM f(x)), (f(x)).*; the item q.*
// alone expands the FROM table's columns), or a (TABLE …) or (VALUES …) subquery,
// named after the table's column or column1. A scalar subquery's other targets are
// named by words its text shows, which mayNameOutput finds.
func (p *parser) unreadableOutput(from, to int) bool {
	if to-from == 3 && p.isIdent(from) && p.punct(from+1, ".") && p.punct(from+2, "*") {
		return false
	}
	for k := from; k < to; k++ {
		if p.punct(k, "(") && (p.kw(k+1, "TABLE") || p.kw(k+1, "VALUES")) {
			return true
		}
		if p.punct(k, "*") && (p.kwIn(k-1, "SELECT", "ALL", "DISTINCT") || p.punct(k-1, ",") || p.punct(k-1, ".") || p.punct(k-1, "(") ||
			k+1 == to || p.kw(k+1, "FROM") || p.punct(k+1, ",") || p.punct(k+1, ")")) {
			return true
		}
	}
	return false
}

// stringOutput reports whether the top-level string literal sig[i] of the select list
// sig[from:to] names an output column on MySQL/MariaDB, which take a string literal
// ('id', or "id" without ANSI_QUOTES) as an alias, after AS or bare (balance 'id'),
// and name an item that is a string literal alone by its value (SELECT 'id'). A
// literal that ends an item after an operator (x = 'id') is an operand.
func (p *parser) stringOutput(i, from, to int) bool {
	if p.rw.numbered || p.sig[i].Kind != sqllex.KindString || !(i+1 == to || p.punct(i+1, ",")) {
		return false
	}
	return i == from || p.punct(i-1, ",") || p.punct(i-1, ")") || p.sig[i-1].Kind != sqllex.KindPunct
}

// undecodedName stands for an output name that outputName cannot decode: it may be
// any name.
const undecodedName = "\x00"

// outputName is the name sig[i] gives or refers to as a select-list output column,
// folded as the server compares such names: PostgreSQL as foldedAt folds them;
// MySQL/MariaDB without regard to case, quoted or not, a string literal read by its
// value (mysqlString), and without leading blanks (mysqlBlanks). It is undecodedName
// where the token cannot be decoded.
func (p *parser) outputName(i int) string {
	if p.rw.numbered {
		if n := p.foldedAt(i); n != "" {
			return n
		}
		return undecodedName
	}
	var n string
	var ok bool
	if p.sig[i].Kind == sqllex.KindString {
		n, ok = mysqlString(p.text(p.sig[i]), p.rw.syn.BackslashEscapes)
	} else {
		n, ok = p.ident(i)
	}
	if !ok {
		return undecodedName
	}
	// MariaDB drops the leading blanks of a name it gives an output column (AS
	// ' balance' and AS ` balance` name the column balance, with a warning).
	return strings.ToLower(strings.TrimLeft(n, mysqlBlanks))
}

// mysqlBlanks are the bytes MariaDB's my_isspace takes for blanks: the ones it drops
// from the start of an output column's name.
const mysqlBlanks = " \t\n\v\f\r"

// mysqlString returns the value of the MySQL/MariaDB string literal lit, '…' or "…": a
// doubled quote stands for one and, with esc (no NO_BACKSLASH_ESCAPES), a backslash
// escape stands for the character the server reads (\n a newline, \% and \_
// themselves with the backslash, any other escaped character itself). ok is false for
// any other text (a prefixed literal: N'…', X'…', _charset'…').
func mysqlString(lit string, esc bool) (string, bool) {
	if len(lit) < 2 || (lit[0] != '\'' && lit[0] != '"') || lit[len(lit)-1] != lit[0] {
		return "", false
	}
	q, body := lit[0], lit[1:len(lit)-1]
	b := make([]byte, 0, len(body))
	for j := 0; j < len(body); j++ {
		c := body[j]
		switch {
		case c == q && j+1 < len(body) && body[j+1] == q:
			j++
		case c == '\\' && esc && j+1 < len(body):
			j++
			switch e := body[j]; e {
			case '0':
				c = 0
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'Z':
				c = 0x1a
			case '%', '_':
				b = append(b, '\\')
				c = e
			default:
				c = e
			}
		}
		b = append(b, c)
	}
	return string(b), true
}

// claimLocatedPlain is the fencing UPDATE of a PostgreSQL claim without ORDER BY,
// LIMIT, OFFSET or NOWAIT, run as two statements (its one statement not taken), that
// records the ctids of the rows it stamps as the located DELETE does (stampRecord), so
// that its read (claimRead, located) returns only rows this claim stamped — not rows
// the holder stamped before with the same token, which a trigger or a concurrent
// commit can move into the selection as a stamped row leaves it (red-team rt19c F1):
//
//	[WITH <caller's list>,] fencedsql_claimed AS (UPDATE t SET … WHERE … RETURNING ctid)
//	    SELECT FROM fencedsql_claimed WHERE <stampRecord>
//
// It is Pre's keyed form (Plan.Keyed), with its read's marked ClaimLocator: the
// wrapper sends them where a ctid identifies the table's rows (dialect.LocatorChecker).
func (p *parser) claimLocatedPlain(g *Table, r tableRef, clauses map[string][2]int, with, nUser int) *Plan {
	b := p.newBuilder(nUser)
	b.compact = true
	if with >= 0 {
		b.copy(p.sig[with].Start, p.endOf(p.start))
		b.write(", ")
	} else {
		b.write("WITH ")
	}
	b.write(claimedName + " AS (")
	p.claimUpdate(b, g, r, clauses, "WHERE")
	b.write(" RETURNING ctid) SELECT FROM " + claimedName + " WHERE " + stampRecord)
	return b.finish(KindUpdate, g)
}
