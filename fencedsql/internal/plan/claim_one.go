package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// The claim in one statement (PostgreSQL). The two-statement claim runs the fencing
// UPDATE, then the caller's SELECT, and counts the rows read against the rows stamped.
// On PostgreSQL the same claim can return the caller's rows itself:
//
//	[WITH <the caller's list>,] fencedsql_claimed AS (
//	    UPDATE t [AS a] SET <the fencing assignments> WHERE <the claim's selection>
//	    RETURNING a.*)
//	SELECT <the caller's select list> FROM fencedsql_claimed AS a [<the caller's ORDER BY>]
//
// The UPDATE is the fencing UPDATE of the two-statement form (Pre): the same
// assignments, and the same selection — the caller's WHERE, or the row locator
// (claimByLocator) when the read has ORDER BY, LIMIT, OFFSET or NOWAIT, which then has
// applied LIMIT and OFFSET already, so the outer SELECT applies neither again. The
// rows returned are the rows the UPDATE returns, so they are exactly the rows stamped
// and no count is needed; a newer token on one of them fails the statement (ErrFenced)
// and nothing is changed. PostgreSQL runs a query with a data-modifying WITH query to
// completion before it sends the first row (its portal stores the result), so an
// older holder gets ErrFenced before any row, as with two statements. The caller's
// WITH list stays in front (RECURSIVE included: a list may mix recursive and plain
// queries), followed by the claim's query; the list's queries are evaluated once, in
// the statement's snapshot, as the two-statement form's fencing UPDATE sees them.
//
// Selection. The rows are selected once, before the claim changes them: where the
// claim changes what the caller's WHERE reads (a BEFORE UPDATE trigger maintaining a
// column, say), the two-statement form selects other rows the second time and is
// refused at run time (exact.go), while this form returns the rows that matched, as
// the raw read would. Under a concurrent transaction that changes selected rows while
// the claim waits for them, the row locator claims exactly the rows its locking query
// kept; with a LIMIT, a row that left the selection and was replaced by one the other
// transaction changed too is out of the locator's reach (it reaches only rows its
// snapshot's LIMIT saw), and the claim then fails whole (ErrClaimConflict,
// claimByLocator) — never returning, or holding, a row it did not claim.
//
// Snapshot. In one statement every query but the outer SELECT's scan of
// fencedsql_claimed sees the statement's snapshot, the values before the UPDATE; in
// the two-statement form the SELECT runs after the UPDATE and sees its changes. The
// claimed rows themselves are the same in both (RETURNING yields the rows as updated,
// triggers' and generated columns' changes included). The one-statement form is
// therefore used only when the outer SELECT reads nothing but those rows, and only
// through expressions that cannot tell the forms apart. It keeps the two-statement
// form (ClaimOne nil) for:
//
//   - a select list or ORDER BY holding a query (SELECT, VALUES, TABLE, WITH, LATERAL):
//     it would read the old values of the table, or of tables its triggers write;
//   - a call of any function but a short list of built-in scalar ones: an aggregate,
//     window or set-returning function (which PostgreSQL refuses in a locking read),
//     or a function that reads tables (old values, like a subquery);
//   - a reference to the row itself by its table or alias name, or as a.* in an
//     argument list (its type would become an anonymous record), a name qualified by anything but the table's alias or name
//     (schema.table.column), a system column (ctid, xmin, xmax, cmin, cmax, tableoid:
//     RETURNING a.* has none of them);
//   - SELECT DISTINCT (PostgreSQL refuses it in a locking read), a statement that
//     goes on after its locking clause, a statement that names fencedsql_claimed.
//
// Locks. The UPDATE takes FOR NO KEY UPDATE row locks, at least as strong as FOR NO
// KEY UPDATE, FOR SHARE and FOR KEY SHARE. A read FOR UPDATE also blocks a concurrent
// FOR KEY SHARE (a foreign key check of a referencing row), which the UPDATE alone
// would let through: its claim first locks the rows FOR UPDATE in a subquery of the
// UPDATE's condition (claimUpdateLocking), or by the row locator, whose locking query
// takes FOR UPDATE then, so the lock it asked for is held, as the two-statement form's
// SELECT holds it. For the other strengths the row locator's locking query takes FOR
// NO KEY UPDATE (claimLockClause), the UPDATE's own lock, and no more.
//
// A trigger that changes the claimed rows again after the UPDATE (an AFTER trigger
// updating its own table) would run before the two-statement form's SELECT but after
// this statement's result is computed, and a rule on UPDATE makes PostgreSQL refuse
// the statement: the planner cannot see either, so the wrapper sends this form only
// after the dialect's dialect.ClaimOneChecker said the table has neither.

// claimedName names the claim's WITH query. A statement that uses the name itself
// keeps the two-statement form.
const claimedName = "fencedsql_claimed"

// claimShape is what lockingRead found out about a claimable locking read.
type claimShape struct {
	g       *Table
	r       tableRef
	with    int               // sig index of the WITH list, -1 for none
	from    int               // sig index of the FROM keyword
	lock    int               // sig index of the locking clause
	clauses map[string][2]int // the clauses that select the claim's rows
	read    map[string][2]int // the read's clauses (its ORDER BY, which the outer SELECT keeps)
	nowait  bool
	nUser   int
}

// claimOne builds the one-statement claim of a claimable PostgreSQL locking read, or
// returns nil when the read's shape keeps the two-statement form (see above).
func (p *parser) claimOne(s claimShape) *Plan {
	if !p.oneClaimable(s) {
		return nil
	}
	b := p.newBuilder(s.nUser)
	b.compact = true
	if s.with >= 0 {
		b.copy(p.sig[s.with].Start, p.endOf(p.start))
		b.write(", ")
	} else {
		b.write("WITH ")
	}
	q := p.qualifier(s.r)
	located := locatorClaim(s.clauses, s.nowait)
	if located {
		p.claimLocated(b, s.g, s.r, s.clauses, p.locksForUpdate(s.lock), s.nowait, q+".*")
	} else {
		b.write(claimedName + " AS (")
		p.claimUpdateLocking(b, s.g, s.r, s.clauses, p.locksForUpdate(s.lock))
		b.write(" RETURNING " + q + ".*)")
	}
	b.write(" SELECT")
	if p.start+1 < s.from {
		b.write(" ")
		b.copy(p.sig[p.start+1].Start, p.endOf(s.from))
	}
	b.write(" FROM " + claimedName + " AS " + q)
	if located {
		b.write(" WHERE " + claimConflictCheck)
	}
	p.copyClauses(b, s.read, "ORDER")
	one := b.finish(KindClaim, s.g)
	one.ConflictChecked = located
	return one
}

// claimUpdateLocking writes the claiming UPDATE of a read without ORDER BY, LIMIT,
// OFFSET or NOWAIT: the caller's WHERE selects. For a read FOR UPDATE (forUpdate) the
// rows are first locked FOR UPDATE by the same selection, in a subquery the UPDATE's
// condition evaluates once before its first row:
//
//	UPDATE t SET … WHERE (<where>) AND (SELECT count(*) FROM (SELECT FROM t WHERE <where> FOR UPDATE) AS fencedsql_locked) >= 0
//
// Both select in the statement's snapshot and re-check <where> on the newest version
// of a row another transaction changed meanwhile, so the UPDATE stamps exactly the rows
// the locking subquery kept, which it has locked already.
func (p *parser) claimUpdateLocking(b *builder, g *Table, r tableRef, clauses map[string][2]int, forUpdate bool) {
	if !forUpdate {
		p.claimUpdate(b, g, r, clauses, "WHERE")
		return
	}
	b.write("UPDATE ")
	p.copyTable(b, r)
	b.write(" SET ")
	b.assignments(g, p.qualifier(r), false)
	b.write(" WHERE ")
	if c, ok := clauses["WHERE"]; ok {
		b.write("(")
		b.copy(p.sig[c[0]+1].Start, p.endOf(c[1]))
		b.write(") AND ")
	}
	b.write("(SELECT count(*) FROM (SELECT FROM ")
	p.copyTable(b, r)
	p.copyClauses(b, clauses, "WHERE")
	b.write(" FOR UPDATE) AS fencedsql_locked) >= 0")
}

// oneClaimable reports whether the locking read's shape has an identical answer in one
// statement.
func (p *parser) oneClaimable(s claimShape) bool {
	if p.namesClaimQuery() {
		return false
	}
	// Nothing may follow the locking clause but a final ';'.
	for i := s.lock; i < len(p.sig); i++ {
		if p.punct(i, ";") && i != len(p.sig)-1 {
			return false
		}
	}
	if p.kw(p.start+1, "DISTINCT") {
		return false
	}
	if c, ok := s.clauses["WHERE"]; ok && c[1] <= c[0]+1 {
		return false // WHERE without a condition: the database's error, as written
	}
	if !p.oneSafeExprs(s.r, p.start+1, s.from) {
		return false
	}
	if c, ok := s.read["ORDER"]; ok && !p.oneSafeExprs(s.r, c[0]+1, c[1]) {
		return false
	}
	return true
}

// oneSafeExprs reports whether sig[from:to] (a select list or an ORDER BY clause)
// reads only the columns of the claimed rows, through expressions that evaluate the
// same over the table and over the claim's RETURNING rows.
func (p *parser) oneSafeExprs(r tableRef, from, to int) bool {
	qual := p.foldedAt(r.aliasEnd - 1)
	table := p.foldedAt(r.end - 1)
	depth := 0
	for k := from; k < to; k++ {
		switch {
		case p.punct(k, "("):
			depth++
		case p.punct(k, ")"):
			depth--
		case depth > 0 && p.punct(k, ".") && p.punct(k+1, "*"):
			return false // f(a.*) passes the whole row
		}
		if !p.isIdent(k) {
			continue
		}
		name := p.foldedAt(k)
		if name == "" {
			return false
		}
		quoted := p.sig[k].Kind != sqllex.KindWord
		switch {
		case !quoted && oneQueryWords[name]:
			return false
		case systemColumns[name]:
			return false
		case p.punct(k+1, "("):
			if quoted || !p.scalarCall(k, name) {
				return false
			}
		case p.punct(k+1, "."):
			if name != qual {
				return false
			}
		case !p.punct(k-1, ".") && (name == qual || name == table):
			return false // the whole row
		}
	}
	return true
}

// foldedAt returns the identifier at sig[i] as PostgreSQL resolves it (unquoted names
// fold to lower case), or "" when it cannot be decoded.
func (p *parser) foldedAt(i int) string {
	n, ok := p.ident(i)
	if !ok {
		return ""
	}
	if p.sig[i].Kind == sqllex.KindWord {
		return strings.ToLower(n)
	}
	return n
}

// scalarCall reports whether the word name at sig[k], followed by "(", is an operator
// keyword, a type modifier (x::numeric(10, 2), CAST(x AS varchar(5))) or a call of a
// built-in scalar function.
func (p *parser) scalarCall(k int, name string) bool {
	if operatorWords[name] || scalarFuncs[name] || typeWords[name] {
		return true
	}
	return p.punct(k-1, ":") || p.kw(k-1, "AS")
}

// oneQueryWords start a query, or a window or aggregate clause, inside an expression.
var oneQueryWords = map[string]bool{
	"select": true, "values": true, "table": true, "with": true, "lateral": true,
	"over": true, "filter": true, "within": true,
}

// systemColumns are PostgreSQL's system columns: the claim's RETURNING rows have none.
var systemColumns = map[string]bool{
	"ctid": true, "xmin": true, "xmax": true, "cmin": true, "cmax": true, "tableoid": true,
}

// operatorWords are keywords that may stand before "(" in an expression without
// calling a function.
var operatorWords = map[string]bool{
	"and": true, "or": true, "not": true, "in": true, "any": true, "some": true, "all": true,
	"between": true, "like": true, "ilike": true, "similar": true, "is": true,
	"distinct": true, "from": true, "as": true, "then": true, "else": true, "when": true,
	"case": true, "by": true, "array": true, "row": true, "escape": true, "to": true,
	"at": true, "zone": true, "asc": true, "desc": true, "nulls": true, "using": true,
	"symmetric": true, "asymmetric": true, "cast": true, "coalesce": true, "nullif": true,
	"greatest": true, "least": true, "extract": true, "position": true, "substring": true,
	"trim": true, "overlay": true, "exists": true,
}

// typeWords are type names that take a modifier in parentheses.
var typeWords = map[string]bool{
	"numeric": true, "decimal": true, "varchar": true, "char": true, "character": true,
	"varying": true, "bit": true, "timestamp": true, "time": true, "interval": true,
	"float": true, "timestamptz": true, "timetz": true, "varbit": true, "bpchar": true,
}

// scalarFuncs are built-in functions that read nothing but their arguments and return
// one value per call.
var scalarFuncs = map[string]bool{
	"lower": true, "upper": true, "length": true, "char_length": true,
	"character_length": true, "octet_length": true, "abs": true, "round": true,
	"trunc": true, "floor": true, "ceil": true, "ceiling": true, "mod": true,
	"sign": true, "sqrt": true, "power": true, "concat": true, "concat_ws": true,
	"substr": true, "btrim": true, "ltrim": true, "rtrim": true, "replace": true,
	"strpos": true, "left": true, "right": true, "split_part": true, "lpad": true,
	"rpad": true, "initcap": true, "md5": true, "format": true, "date_part": true,
	"date_trunc": true, "to_char": true, "to_number": true, "to_date": true,
	"to_timestamp": true, "now": true, "clock_timestamp": true, "age": true, "make_date": true,
	"json_build_object": true, "jsonb_build_object": true, "json_build_array": true,
	"jsonb_build_array": true, "to_json": true, "to_jsonb": true,
	"array_length": true, "cardinality": true, "array_to_string": true,
}
