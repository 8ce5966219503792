package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// Statements that only read a guarded table pass, in these precise shapes; any other
// shape of the same statement is planned as before (fenced or refused).

// merge plans PostgreSQL's MERGE INTO [ONLY] target [[AS] alias] USING source …: it
// writes only its target. A MERGE into a guarded table is refused; a MERGE into
// another table that reads one (USING accounts, or a query of it) passes. A target it
// cannot read is refused when the statement names a guarded table.
func (p *parser) merge() (*Plan, error) {
	i := 1
	if !p.kw(i, "INTO") {
		return p.unknownShape("a MERGE")
	}
	i++
	if p.kw(i, "ONLY") {
		i++
	}
	r, ok := p.parseName(i)
	if !ok {
		return p.unknownShape("a MERGE")
	}
	if g := p.rw.Lookup(r.parts); g != nil {
		return nil, unsupported(g.String(), "MERGE STATEMENT on a guarded table")
	}
	p.parseAlias(&r, "USING")
	if !p.kw(r.aliasEnd, "USING") {
		return p.unknownShape("a MERGE")
	}
	return p.pass(), nil
}

// copyOut plans PostgreSQL's COPY that only reads: COPY (query) TO STDOUT|'file' …
// whose query holds no write, and COPY table [(columns)] TO STDOUT|'file' …. ok is
// false for any other COPY (FROM, TO PROGRAM, a data-modifying query), which the
// caller plans as before.
func (p *parser) copyOut() (*Plan, bool) {
	var to int
	if p.punct(1, "(") {
		end := p.matching(1)
		if end < 0 || p.hasWriteIn(2, end) {
			return nil, false
		}
		to = end + 1
	} else {
		r, ok := p.parseName(1)
		if !ok {
			return nil, false
		}
		to = r.end
		if p.punct(to, "(") {
			if to = p.matching(to); to < 0 {
				return nil, false
			}
			to++
		}
	}
	if !p.kw(to, "TO") || !(p.kw(to+1, "STDOUT") || to+1 < len(p.sig) && p.sig[to+1].Kind == sqllex.KindString) {
		return nil, false
	}
	return p.pass(), true
}

// userVarSet reports a SET at sig[first] whose every item assigns a user variable
// (MySQL/MariaDB @name = expr or @name := expr) with a value that holds no write and
// no string naming a guarded table: SET @x = (SELECT balance FROM accounts …) only
// reads. SET STATEMENT … FOR, system variables and anything else are not.
func (p *parser) userVarSet(first int) bool {
	end := len(p.sig)
	if p.punct(end-1, ";") {
		end--
	}
	if p.hasWriteIn(first, end) {
		return false
	}
	for _, txt := range p.stringTexts(first, end) {
		if stringMentions(txt, p.rw.names...) != "" {
			return false
		}
	}
	i := first + 1
	for {
		// the variable: @name as one token, or '@' followed by a name
		switch {
		case i < end && p.sig[i].Kind == sqllex.KindParam && len(p.text(p.sig[i])) > 1 && p.text(p.sig[i])[0] == '@' && p.text(p.sig[i])[1] != '@':
			i++
		case p.punct(i, "@") && (i+1 < end && (p.sig[i+1].Kind == sqllex.KindWord || p.sig[i+1].Kind == sqllex.KindQuotedIdent)):
			i += 2
		default:
			return false
		}
		if !p.punct(i, "=") && !p.punct(i, ":=") {
			return false
		}
		i = p.clauseEndPunct(i+1, end)
		if i >= end {
			return true
		}
		i++ // ','
	}
}

// clauseEndPunct returns the sig index of the first top-level ',' in sig[i:end], or end.
func (p *parser) clauseEndPunct(i, end int) int {
	depth := 0
	for ; i < end; i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
		case depth == 0 && p.punct(i, ","):
			return i
		}
	}
	return end
}
