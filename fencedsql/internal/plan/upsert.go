package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// insertTail handles what follows the VALUES rows (or MySQL's SET list), starting at
// sig[k]: a MySQL row alias, ON CONFLICT, ON DUPLICATE KEY UPDATE, RETURNING. The
// source is copied into b up to byte offset from. nCols is the number of columns the
// caller's column list names (-1 for MySQL's SET form) and mapped whether it names a
// fencing column: a row alias's column list maps onto them by position.
func (p *parser) insertTail(b *builder, g *Table, q string, k, from int, versioned bool, nCols int, mapped bool) (*Plan, error) {
	rowAlias := ""
	if p.kw(k, "AS") { // MySQL 8 row alias: VALUES (…) AS new [(a, b)]
		if p.isIdent(k + 1) {
			rowAlias, _ = p.ident(k + 1)
		}
		k += 2
		if p.punct(k, "(") {
			e := p.matching(k)
			if e < 0 {
				return nil, unsupported(g.String(), "a row alias with an unbalanced column list")
			}
			// The alias's columns name the caller's columns by position: the wrapper
			// drops the caller's fencing columns and adds its own, so an alias list
			// could name the wrapper's token or version (or another column than the
			// caller meant) as one of the caller's.
			if n := len(p.items(k+1, e)); nCols < 0 || mapped || n != nCols {
				return nil, unsupported(g.String(), "a row alias with a column list (the wrapper adds the token and version columns, which the list would have to name); qualify the alias instead (new.col)")
			}
			k = e + 1
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
			branchEnd := setEnd
			if p.kw(branchEnd, "WHERE") {
				branchEnd = p.clauseEnd(branchEnd+1, "RETURNING", "ON")
			}
			if err := p.proposedFenceRead(g, setStart, branchEnd, set, ""); err != nil {
				return nil, err
			}
			at := p.endOf(setEnd)
			b.setListAt(from, at, set, g, q, versioned)
			from = at
			k = branchEnd
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
		if err := p.proposedFenceRead(g, setStart, setEnd, set, rowAlias); err != nil {
			return nil, err
		}
		if p.rw.syn == sqllex.MySQL && !p.stampNoop && p.selfAssignments(setStart, setEnd) {
			// The ORMs' "insert if absent" (GORM's and ent's DoNothing): the conflict
			// branch changes nothing, so there is nothing to fence in it — as with
			// ON CONFLICT DO NOTHING, only the insert branch carries the token. The
			// stamping form goes along for a table whose guard is installed: MySQL
			// runs the BEFORE UPDATE triggers for the duplicate row even when the
			// update changes nothing, and the guard refuses an UPDATE that does not
			// advance the version.
			b.copy(from, len(p.src))
			pl, err := p.finishInsert(b, g)
			if err != nil {
				return nil, err
			}
			p.stampNoop = true
			st, err := p.insert(versioned)
			p.stampNoop = false
			if err != nil {
				return nil, err
			}
			pl.Stamped = st
			return pl, nil
		}
		b.spliceAssignments(from, p.endOf(setEnd), set, g, "", versioned)
		return p.finishInsert(b, g)
	case k < len(p.sig) && !p.kw(k, "RETURNING") && !p.punct(k, ";"):
		return nil, unsupported(g.String(), "INSERT with an unexpected clause %q", p.text(p.sig[k]))
	}
	b.copy(from, len(p.src))
	return p.finishInsert(b, g)
}

// proposedFenceRead refuses a conflict branch, sig[from:to] (its SET list and, on
// PostgreSQL/SQLite, its WHERE), that reads the proposed row's token or version:
// EXCLUDED.col (PostgreSQL, SQLite), VALUES(col) / VALUE(col) and a row alias's
// alias.col (MySQL/MariaDB). The wrapper puts its token and version 1 in the proposed
// row in place of the caller's values, so such a read would see those, not what the
// caller wrote (a version-checked upsert would compare against 1). A whole-row
// reference to EXCLUDED reads them too. Items of the SET list that e drops (they
// assign a fencing column, which the wrapper assigns itself) are not judged.
func (p *parser) proposedFenceRead(g *Table, from, to int, e listEdit, rowAlias string) error {
	dropped := func(i int) bool {
		for _, s := range e.skips {
			if p.sig[i].Start >= s[0] && p.sig[i].End <= s[1] {
				return true
			}
		}
		return false
	}
	refuse := func(what string) error {
		return unsupported(g.String(), "the conflict branch reads %s of the proposed row, where fencedsql writes the token and version 1 in place of the caller's values; compare the stored row's columns, or use fencedsql.ExpectVersion for a version check", what)
	}
	for i := from; i < to; i++ {
		if !p.isIdent(i) || p.punct(i-1, ".") || dropped(i) {
			continue
		}
		n, ok := p.ident(i)
		if !ok {
			return unsupported(g.String(), "an identifier it cannot decode in the conflict branch")
		}
		excluded := p.rw.syn != sqllex.MySQL && strings.EqualFold(n, "excluded")
		switch {
		case excluded, rowAlias != "" && strings.EqualFold(n, rowAlias):
			if !p.punct(i+1, ".") {
				if !excluded {
					continue // a column of that name
				}
				return refuse(quoteName(n) + " as a whole row (with its " + quoteName(g.TokenCol) + " and " + quoteName(g.VerCol) + ")")
			}
			if p.punct(i+2, "*") {
				return refuse(n + ".*")
			}
			if p.isIdent(i + 2) {
				if c, fence, ok := p.fenceColumn(g, i+2); !ok || fence {
					return refuse(n + "." + quoteName(c))
				}
			}
		case (p.kw(i, "VALUES") || p.kw(i, "VALUE")) && p.punct(i+1, "("):
			end := p.matching(i + 1)
			if end < 0 {
				end = to
			}
			for j := i + 2; j < end; j++ {
				if p.isIdent(j) {
					if c, fence, ok := p.fenceColumn(g, j); !ok || fence {
						return refuse(strings.ToUpper(n) + "(" + quoteName(c) + ")")
					}
				}
			}
		}
	}
	return nil
}

// selfAssignments reports whether every item of the ON DUPLICATE KEY UPDATE list
// sig[from:to] assigns a column to itself: c = c, c = t.c, t.c = c (t the target
// table's name or alias (parser.own), or schema.t), in any quoting or letter case (MySQL column
// names are case-insensitive). c = VALUES(c), c = new.c and anything else is a write.
func (p *parser) selfAssignments(from, to int) bool {
	if from >= to {
		return false
	}
	tableNames := p.own.names()
	// column reads a possibly qualified column name at sig[i:end] and returns its
	// column and whether its qualifier (if any) names the target.
	column := func(i, end int) (string, bool) {
		var parts []string
		for ; i < end; i++ {
			if !p.isIdent(i) {
				return "", false
			}
			n, ok := p.ident(i)
			if !ok {
				return "", false
			}
			parts = append(parts, n)
			if i+1 == end {
				break
			}
			if !p.punct(i+1, ".") {
				return "", false
			}
			i++
		}
		switch len(parts) {
		case 1:
			return parts[0], true
		case 2, 3:
			t := parts[len(parts)-2]
			for _, tn := range tableNames {
				if sqllex.LowerASCII(t) == sqllex.LowerASCII(tn) {
					return parts[len(parts)-1], true
				}
			}
		}
		return "", false
	}
	for _, it := range p.items(from, to) {
		eq := -1
		for i := it[0]; i < it[1]; i++ {
			if p.assign(i) {
				eq = i
				break
			}
		}
		if eq <= it[0] || eq+1 >= it[1] {
			return false
		}
		a, ok1 := column(it[0], eq)
		c, ok2 := column(eq+1, it[1])
		// ASCII letters only: MariaDB tells s from ſ (U+017F), µ from μ, … in column
		// names (a red-team pass had "s = ſ" judged a self-assignment, sent unfenced).
		if !ok1 || !ok2 || sqllex.LowerASCII(a) != sqllex.LowerASCII(c) {
			return false
		}
	}
	return true
}
