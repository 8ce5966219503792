package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// locksOnlyUnguarded reports, for a PostgreSQL SELECT whose first top-level locking
// clause is at sig[lock] (the query at sig[p.start], under the WITH list at sig[with]
// when with >= 0), that it certainly locks no row of a guarded table: every top-level
// locking clause has an OF list (PostgreSQL locks only the relations it names; a clause
// without one locks every table of the FROM list), and every name in those lists is
// unqualified, names no guarded table, no name of the WITH list, and is declared
// nowhere in the statement as the alias of a guarded table or of anything but a table
// (a subquery, a function or a column list: locking a subquery's alias locks the rows
// of the tables it reads). Such a read needs no claim; it passes with the relations
// it reads (Plan.LockThrough: a view over a guarded table named in the OF list is
// refused at run time). Anything it cannot read answers false: the caller refuses.
func (p *parser) locksOnlyUnguarded(lock, with int) bool {
	if !p.rw.numbered || p.rw.syn != sqllex.Postgres || p.hasUndecodableIdent() || p.hasFoldUnsureIdent() {
		// A name it cannot decode (U&"…") may be a guarded table or its alias, and so
		// may one it cannot compare as PostgreSQL does (red-team rt33b F1).
		return false
	}
	var names []int          // sig indexes of the OF lists' names
	inList := map[int]bool{} // the same, as a set
	depth := 0
	for i := lock; i < len(p.sig); i++ {
		switch {
		case p.punct(i, "("):
			depth++
			continue
		case p.punct(i, ")"):
			depth--
			continue
		case depth != 0:
			continue
		}
		n := p.lockLen(i)
		if n == 0 {
			continue
		}
		k := i + n
		if !p.kw(k, "OF") {
			return false // locks every table of the FROM list
		}
		for k++; ; k += 2 {
			if !p.isIdent(k) || p.punct(k+1, ".") || p.foldedAt(k) == "" {
				return false
			}
			names = append(names, k)
			inList[k] = true
			if !p.punct(k+1, ",") {
				break
			}
		}
		i = k
	}
	if len(names) == 0 {
		return false
	}
	var withNames []string
	if with >= 0 {
		withNames = p.withNames(with, p.start)
	}
	for _, k := range names {
		name, _ := p.ident(k)
		if p.rw.guards[p.rw.Key(name)] != nil {
			return false
		}
		want := p.foldedAt(k)
		for _, w := range withNames {
			if w == "\x00" || w == want {
				return false
			}
		}
		for m := range p.sig {
			if inList[m] || !p.isIdent(m) || p.punct(m+1, ".") || p.foldedAt(m) != want {
				continue
			}
			if p.punct(m+1, "(") || p.kw(m+1, "AS") && (p.punct(m+2, "(") || p.kwIn(m+2, "NOT", "MATERIALIZED")) {
				return false // a WITH list's name, or a call
			}
			prev := m - 1
			if p.kw(prev, "AS") {
				prev--
			}
			if p.punct(prev, ")") || p.punct(prev, "*") {
				return false // the alias of a subquery, a function or ONLY t *
			}
			if prev >= 0 && p.isIdent(prev) {
				// the alias of the table whose name ends at prev
				first := prev
				for first >= 2 && p.punct(first-1, ".") && p.isIdent(first-2) {
					first -= 2
				}
				if r, ok := p.parseName(first); ok && r.end == prev+1 && p.rw.Lookup(r.parts) != nil {
					return false
				}
			}
		}
	}
	return true
}

// hasFoldUnsureIdent reports whether the statement holds an identifier whose
// comparison with another this file cannot make as PostgreSQL makes it: one with a
// byte outside ASCII (PostgreSQL folds an unquoted name's ASCII letters only, foldedAt
// every letter: "É" and É are one name to the server) or longer than PostgreSQL keeps
// (NAMEDATALEN−1 = 63 bytes: two names equal in their first 63 bytes are one).
func (p *parser) hasFoldUnsureIdent() bool {
	for i := range p.sig {
		if !p.isIdent(i) {
			continue
		}
		n, ok := p.ident(i)
		if !ok || len(n) > 63 {
			return true
		}
		for j := 0; j < len(n); j++ {
			if n[j] >= 0x80 {
				return true
			}
		}
	}
	return false
}
