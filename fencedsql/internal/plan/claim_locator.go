package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// claimByLocator: PostgreSQL's claim of a locking read with ORDER BY, LIMIT, OFFSET or
// NOWAIT is one UPDATE over the rows the same locking query locks, found by ctid:
//
//	UPDATE t SET … WHERE ctid = ANY(ARRAY(SELECT ctid … FOR UPDATE) || ARRAY(SELECT ctid …))
//	  AND (ctid = ANY(ARRAY(SELECT ctid … FOR UPDATE) || ARRAY(SELECT ctid …))) IS TRUE
//
// A row another transaction updated and committed while the claim waited for its lock
// has a new version at a new ctid, which the UPDATE's snapshot cannot see: the locking
// subquery returns that new ctid, so an UPDATE by it alone misses the row. The unlocked
// subquery (same snapshot) gives the old version's ctid, which the UPDATE can reach; the
// database then re-checks the condition on the newest version (the IS TRUE copy, which
// the TID scan does not consume and so is always re-checked), and that version's ctid
// is among the locked ones exactly when the locking query kept the row. So the claim
// stamps exactly the rows the locking query locked — or fails with ErrFenced when a
// newer token owns one of them — whether or not another transaction committed changes
// to them meanwhile.

// orderByOutput explains why the ORDER BY of a limited locking read cannot be copied
// into the claim's selection, or returns "". The claim selects rows with the read's
// ORDER BY and LIMIT/OFFSET but not its select list (the locator's SELECT ctid,
// MySQL's UPDATE … ORDER BY): an ORDER BY item that names a select-list position
// (ORDER BY 1) or output name (SELECT balance AS id … ORDER BY id) would order the
// claim's rows by something else, and the claim would stamp other rows than the read
// returns. sel is the select list's sig range, order the ORDER clause's.
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
		bare := item+1 == i || p.kwIn(item+1, "ASC", "DESC", "NULLS", "USING", "COLLATE")
		if item < i && bare && (p.sig[item].Kind == sqllex.KindNumber || p.isIdent(item) && outputs[p.foldedAt(item)]) {
			return "orders by a select-list position or output name (" + p.src[p.sig[item].Start:p.sig[item].End] + ") before a LIMIT or OFFSET: the claim selects its rows without the select list; order by the expression itself"
		}
		item = i + 1
	}
	return ""
}

// outputNames returns the names the select list sig[from:to] gives its columns with AS
// or a bare alias (folded as foldedAt folds them).
func (p *parser) outputNames(from, to int) map[string]bool {
	out := map[string]bool{}
	depth := 0
	for i := from; i < to; i++ {
		switch {
		case p.punct(i, "("), p.punct(i, "["):
			depth++
		case p.punct(i, ")"), p.punct(i, "]"):
			depth--
		case depth != 0 || !p.isIdent(i):
		case p.kw(i-1, "AS") && i-1 >= from:
			out[p.foldedAt(i)] = true
		case i+1 == to || p.punct(i+1, ","):
			// the last word of an item: a bare alias unless it is the whole item or a
			// qualified column (x.col)
			if i > from && !p.punct(i-1, ",") && !p.punct(i-1, ".") {
				out[p.foldedAt(i)] = true
			}
		}
	}
	return out
}
