package plan

import "strings"

// multiDelete plans a MySQL/MariaDB multi-table DELETE: DELETE t1[.*][, t2[.*]] FROM
// <table list> … (the targets at sig[i:to], FROM at sig[to]) or DELETE FROM t1[.*][,
// …] USING <table list> … (USING at sig[to]); the table list starts at sig[to+1] and
// ends at its WHERE. The server deletes from every target, each resolved through the
// aliases of the table list, and only reads the other tables (as the multi-table UPDATE
// whose SET names only other tables: multiUpdate). So it passes when every target names
// a table of the list that is not guarded: an alias of such a table counts as that
// table whatever it is spelled like, and no target names the alias of a guarded table
// or, unless it is the alias of an unguarded one, a guarded table's name;
// otherwise, or when it cannot read the targets or the list, it is refused when the
// statement names a guarded table.
func (p *parser) multiDelete(i, to int) (*Plan, error) {
	if !p.mayNameGuard() {
		return p.pass(), nil
	}
	refuse := func(why string) (*Plan, error) {
		return nil, unsupported(p.firstGuard(), "a multi-table DELETE %s", why)
	}
	if !p.kwIn(to, "FROM", "USING") {
		return refuse("of a shape the rewriter does not know")
	}
	end := p.clauseEnd(to+1, "WHERE")
	guarded, plain, ok := p.tableQualifiers(to+1, end)
	if !ok {
		return refuse("whose table list it cannot read")
	}
	targets, at, ok := p.deleteTargets(i, to)
	if !ok {
		return refuse("whose target list it cannot read")
	}
	var listed []int
	for k, t := range targets {
		qual := strings.ToLower(t[len(t)-1])
		// An unqualified target that names an alias (or name) of an unguarded table of
		// the list is that table, even when it is spelled like a guarded table
		// (`DELETE accounts FROM other AS accounts JOIN accounts AS x` deletes from
		// other: red-team rt47f F2, it was refused); a qualified one is judged by its
		// name as well.
		alias := len(t) == 1 && plain[qual]
		switch {
		case guarded[qual] || !alias && p.rw.Lookup(t) != nil:
			return refuse("that deletes from a guarded table")
		case !plain[qual]:
			return refuse("whose target is not a table of its list")
		}
		if alias {
			listed = append(listed, at[k])
		}
	}
	// The backstop, which reads a guarded name after DELETE [FROM] as a write of that
	// table, is told which targets were resolved here.
	p.aliasTargets = listed
	return p.pass(), nil
}

// deleteTargets reads the target list of a multi-table DELETE, sig[i:to]: names
// (qualified or not, each optionally followed by .*) separated by commas, and the sig
// index each starts at. ok is false for anything else, or an empty list.
func (p *parser) deleteTargets(i, to int) (targets [][]string, at []int, ok bool) {
	for k := i; ; {
		var parts []string
		at = append(at, k)
		for {
			if !p.isIdent(k) {
				return nil, nil, false
			}
			n, ok := p.ident(k)
			if !ok {
				return nil, nil, false
			}
			parts = append(parts, n)
			k++
			if !p.punct(k, ".") {
				break
			}
			if p.punct(k+1, "*") {
				k += 2
				break
			}
			k++
		}
		targets = append(targets, parts)
		switch {
		case k == to:
			return targets, at, true
		case p.punct(k, ","):
			k++
		default:
			return nil, nil, false
		}
	}
}
