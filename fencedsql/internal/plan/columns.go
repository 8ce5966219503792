package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// The caller's statement may name the fencing columns itself: an ORM model that maps
// fence_token and version sends them in INSERT column lists, SET lists and upsert update
// lists. The wrapper owns those columns, so such items are dropped from the rewritten
// statement (their arguments with them) and the wrapper's own token and version take
// their place: the caller can never lower the token or choose the version.

// listEdit says which items of a comma-separated list are dropped: the byte ranges of
// the source to skip, and how many items remain.
type listEdit struct {
	skips [][2]int // byte ranges of src, ascending and disjoint
	kept  int
}

// items splits sig[from:to] at its top-level commas into [start, end) sig ranges. An
// empty item (",," or a trailing comma) comes back empty: callers refuse such lists.
func (p *parser) items(from, to int) [][2]int {
	var out [][2]int
	depth, start := 0, from
	for i := from; i < to; i++ {
		if p.sig[i].Kind != sqllex.KindPunct {
			continue
		}
		switch p.text(p.sig[i]) {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ",":
			if depth == 0 {
				out = append(out, [2]int{start, i})
				start = i + 1
			}
		}
	}
	return append(out, [2]int{start, to})
}

// dropItems returns the edit that removes the items whose index is in drop (ascending)
// from the list items, with the comma that separates each from its neighbour.
func (p *parser) dropItems(items [][2]int, drop []int) listEdit {
	e := listEdit{kept: len(items) - len(drop)}
	dropped := make([]bool, len(items))
	for _, k := range drop {
		dropped[k] = true
	}
	keptAfter := make([]bool, len(items)+1) // keptAfter[k]: some item after k is kept
	for k := len(items) - 1; k >= 0; k-- {
		keptAfter[k] = keptAfter[k+1] || (k+1 < len(items) && !dropped[k+1])
	}
	for _, k := range drop {
		var r [2]int
		switch {
		case keptAfter[k]:
			// The item and the comma after it, up to the next item.
			r = [2]int{p.sig[items[k][0]].Start, p.sig[items[k+1][0]].Start}
		case k > 0:
			// Nothing kept after it: from the end of the item before (its comma with it).
			r = [2]int{p.sig[items[k-1][1]-1].End, p.sig[items[k][1]-1].End}
		default:
			r = [2]int{p.sig[items[k][0]].Start, p.sig[items[k][1]-1].End}
		}
		if n := len(e.skips); n > 0 && r[0] <= e.skips[n-1][1] {
			e.skips[n-1][1] = max(e.skips[n-1][1], r[1])
			continue
		}
		e.skips = append(e.skips, r)
	}
	return e
}

// setList finds the items of the SET list sig[from:to] that assign the token or version
// column (`col = …`, `t.col = …`) and returns the edit that drops them. A row
// assignment `(a, col) = …` that names one is refused: its other columns could not be
// kept apart from it.
func (p *parser) setList(g *Table, from, to int) (listEdit, error) {
	if from >= to {
		return listEdit{}, nil
	}
	items := p.items(from, to)
	if hasEmpty(items) {
		return listEdit{}, unsupported(g.String(), "a SET list with an empty item")
	}
	var drop []int
	for k, it := range items {
		if p.punct(it[0], "(") {
			for i := it[0] + 1; i < it[1] && !p.assign(i); i++ {
				if p.isIdent(i) {
					if n, fence, _ := p.fenceColumn(g, i); fence {
						return listEdit{}, reserved(g, n)
					}
				}
			}
			continue
		}
		if err := p.indirectTarget(g, it); err != nil {
			return listEdit{}, err
		}
		// The target is the last part of a possibly qualified name before '='.
		i := p.lastNamePart(it[0], it[1])
		if p.isIdent(i) && p.assign(i+1) && i+1 < it[1] {
			if n, fence, _ := p.fenceColumn(g, i); fence {
				if i+2 >= it[1] {
					// "col =" with nothing after it: the caller's statement is broken, and
					// dropping the item would make it run.
					return listEdit{}, unsupported(g.String(), "an assignment of %q without a value", n)
				}
				drop = append(drop, k)
			}
		}
	}
	if len(drop) > 0 {
		// Dropping items from a list that is not a list of assignments could turn a
		// broken statement into one that runs.
		for _, it := range items {
			if !p.hasTopLevel(it, "=") && !p.hasTopLevel(it, ":=") {
				return listEdit{}, unsupported(g.String(), "a SET list item that is not an assignment")
			}
		}
	}
	return p.dropItems(items, drop), nil
}

// assign reports whether sig[i] is an assignment operator of a SET list: = or, on
// MySQL/MariaDB, := (which they accept there too).
func (p *parser) assign(i int) bool { return p.punct(i, "=") || p.punct(i, ":=") }

// hasTopLevel reports whether the punctuation s occurs in sig[it[0]:it[1]] outside
// parentheses.
func (p *parser) hasTopLevel(it [2]int, s string) bool {
	depth := 0
	for i := it[0]; i < it[1]; i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
		case depth == 0 && p.punct(i, s):
			return true
		}
	}
	return false
}

// columnList finds the fencing columns in an INSERT column list sig[from:to] and
// returns their positions and the edit that drops them.
func (p *parser) columnList(g *Table, from, to int) ([]int, listEdit, error) {
	items := p.items(from, to)
	if hasEmpty(items) {
		return nil, listEdit{}, unsupported(g.String(), "an INSERT column list with an empty item")
	}
	var drop []int
	for k, it := range items {
		if err := p.indirectTarget(g, it); err != nil {
			return nil, listEdit{}, err
		}
		i := p.lastNamePart(it[0], it[1])
		if i != it[1]-1 || !p.isIdent(i) {
			continue
		}
		n, fence, _ := p.fenceColumn(g, i)
		if !fence {
			continue
		}
		if i > it[0] && p.rw.syn != sqllex.MySQL {
			// PostgreSQL reads `t.col` here as a field of a column t, SQLite not at all:
			// dropping the item would make a broken statement run.
			return nil, listEdit{}, unsupported(g.String(), "an INSERT column list naming %q qualified", n)
		}
		// MySQL/MariaDB take `t.col` and `db.t.col` for col when t is the target
		// (indirectTarget refused any other qualifier; red-team rt27b F4: the caller's
		// item was kept beside the wrapper's, "Column specified twice").
		drop = append(drop, k)
	}
	return drop, p.dropItems(items, drop), nil
}

// indirectTarget refuses a SET target or INSERT column item sig[it[0]:it[1]] that
// names a fencing column in a form the wrapper must not drop, since dropping it would
// turn a broken statement into one that runs (red-team rt46f F1, rt47f F1), and
// keeping it beside the wrapper's own assignment is the server's raw error after a
// round trip.
//
// On PostgreSQL and SQLite that is a fencing column written through more than its bare
// name: a subscript or a field of it (`fence_token[1] = …`, `version.f`), which
// PostgreSQL reads as an assignment into the column, or a qualified name ending in it
// (`t.fence_token = …` in a SET list), which neither accepts there.
//
// On MySQL/MariaDB a qualified name is the column itself when its qualifier names the
// target (ownTarget.qualifies: `accounts.fence_token`, `a.fence_token` after `accounts
// AS a`, `db.accounts.fence_token` after `db.accounts`), and is dropped then (setList,
// columnList); any other qualifier (another table, the table's name once it has an
// alias, a database the statement did not write the target in, a case variant) is
// refused (red-team rt47f F1: the server rejects the item, 1054 Unknown column, and
// dropping it made the rest of the statement run). There is no subscript there.
func (p *parser) indirectTarget(g *Table, it [2]int) error {
	if p.rw.syn == sqllex.MySQL {
		return p.foreignQualified(g, it)
	}
	if !p.isIdent(it[0]) {
		return nil
	}
	end := it[1]
	for i := it[0]; i < it[1]; i++ {
		if p.assign(i) {
			end = i
			break
		}
	}
	if end-it[0] < 2 {
		return nil
	}
	for i := it[0]; i < end; i++ {
		if !p.isIdent(i) || (i > it[0] && !p.punct(i-1, ".")) {
			continue
		}
		if n, fence, _ := p.fenceColumn(g, i); fence && (i == it[0] || i == p.lastNamePart(it[0], end)) {
			return unsupported(g.String(), "the statement sets the reserved column %q through a subscript, a field or a qualified name; fencedsql maintains it", n)
		}
	}
	return nil
}

// foreignQualified is indirectTarget on MySQL/MariaDB: it refuses an item whose target
// is a qualified name ending in a fencing column that the qualifier does not tie to the
// statement's target (parser.own).
func (p *parser) foreignQualified(g *Table, it [2]int) error {
	end := it[1]
	for i := it[0]; i < it[1]; i++ {
		if p.assign(i) {
			end = i
			break
		}
	}
	last := p.lastNamePart(it[0], end)
	if last == it[0] || last+1 != end || !p.isIdent(last) {
		return nil
	}
	n, fence, _ := p.fenceColumn(g, last)
	if !fence {
		return nil
	}
	var quals []string
	for i := it[0]; i < last; i += 2 {
		q, ok := p.ident(i)
		if !ok {
			quals = nil
			break
		}
		quals = append(quals, q)
	}
	if !p.own.qualifies(quals) {
		return unsupported(g.String(), "the statement sets the reserved column %q qualified by a name that is not the target's own (its alias when it has one, else its name, with a database only as the target is written); the server would reject the item, and fencedsql maintains the column", n)
	}
	return nil
}

// lastNamePart returns the index of the last part of the possibly qualified name that
// starts at sig[i] (`col`, `t.col`, `db.t.col`), looking no further than sig[to-1].
func (p *parser) lastNamePart(i, to int) int {
	for i+2 < to && p.punct(i+1, ".") && p.isIdent(i) {
		i += 2
	}
	return i
}

// hasEmpty reports an empty item among items.
func hasEmpty(items [][2]int) bool {
	for _, it := range items {
		if it[0] >= it[1] {
			return true
		}
	}
	return false
}

// reserved is the refusal of a statement that assigns a fencing column in a form the
// wrapper cannot replace.
func reserved(g *Table, col string) error {
	return unsupported(g.String(), "the statement sets the reserved column %q in a row assignment; fencedsql maintains it", col)
}
