package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Every locking read of a guarded table is claimed exactly or refused. The claimed
// forms (claim.go) are a single-table SELECT with one locking clause — FOR UPDATE,
// FOR NO KEY UPDATE, FOR SHARE, FOR KEY SHARE or LOCK IN SHARE MODE — written plainly,
// inside parentheses that wrap the whole statement, or (PostgreSQL) after a WITH list
// that only reads. Every other statement that holds a locking clause and names a
// guarded table is refused when it carries a token (a plain locking read without
// one): a locking subquery, a locking query inside a WITH list, a cursor over a
// locking query (DECLARE … CURSOR FOR SELECT … FOR UPDATE: its rows are fetched later
// and cannot be counted against the claim), a locking SELECT … INTO (variables, a new
// table or a file: it returns no rows to count), a locking query inside INSERT, SET,
// MERGE or COPY. A fenced write (UPDATE, DELETE, INSERT) that holds one is refused
// whatever it carries: its fencing stamps only the rows it writes. DDL is left to
// WithDDL.

// explainHeads plan their locking reads themselves (explain).
var explainHeads = map[string]bool{"EXPLAIN": true, "ANALYZE": true, "DESCRIBE": true, "DESC": true}

// lockLen returns the number of tokens of the locking clause that starts at sig[i]
// (FOR UPDATE, FOR NO KEY UPDATE, FOR SHARE, FOR KEY SHARE, LOCK IN SHARE MODE), or 0.
func (p *parser) lockLen(i int) int {
	switch {
	case p.kw(i, "FOR") && p.kwIn(i+1, "UPDATE", "SHARE"):
		return 2
	case p.kw(i, "FOR") && p.kw(i+1, "NO") && p.kw(i+2, "KEY") && p.kw(i+3, "UPDATE"):
		return 4
	case p.kw(i, "FOR") && p.kw(i+1, "KEY") && p.kw(i+2, "SHARE"):
		return 3
	case p.kw(i, "LOCK") && p.kw(i+1, "IN") && p.kw(i+2, "SHARE") && p.kw(i+3, "MODE"):
		return 4
	}
	return 0
}

// anyLock returns the sig index of the first locking clause in sig[from:to] at any
// depth, or -1.
func (p *parser) anyLock(from, to int) int {
	for i := from; i < to && i < len(p.sig); i++ {
		if p.lockLen(i) > 0 {
			return i
		}
	}
	return -1
}

// nestedLock returns the sig index of a locking clause in sig[from:to] inside
// parentheses (a subquery), or -1.
func (p *parser) nestedLock(from, to int) int {
	depth := 0
	for i := from; i < to && i < len(p.sig); i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
		case depth != 0 && p.lockLen(i) > 0:
			return i
		}
	}
	return -1
}

// mayNameGuard reports an identifier that names a guarded table, or one that cannot be
// decoded (it may).
func (p *parser) mayNameGuard() bool { return p.mentionsGuard() || p.hasUndecodableIdent() }

// unclaimedLock applies the rule above to the plan made for a statement whose head is
// head: a statement that holds a locking clause and names a guarded table, and that
// was not planned as a claim, is refused (a fenced write) or becomes a claim refused
// when it carries a token (anything else but DDL).
func (p *parser) unclaimedLock(head string, pl *Plan) (*Plan, error) {
	if pl == nil || pl.Kind == KindClaim || ddlHeads[head] || explainHeads[head] {
		return pl, nil
	}
	at := p.anyLock(0, len(p.sig))
	if at < 0 || !p.mayNameGuard() {
		return pl, nil
	}
	what := lockedWhat(head)
	if pl.Kind != KindPass {
		return nil, unsupported(p.firstGuard(), "%s holding a locking read (%s) of a statement that names a guarded table: its fencing stamps only the rows it writes, not the rows the locking read locks", strings.ToUpper(head), p.lockText(at))
	}
	return p.claimRefused(p.firstGuard(), "%s (%s) in a statement that names a guarded table: it cannot be claimed exactly; lock the guarded table's rows with a single-table SELECT … FOR UPDATE", what, p.lockText(at))
}

// lockedWhat names the form of an unclaimed locking read by its statement's head.
func lockedWhat(head string) string {
	switch head {
	case "DECLARE":
		return "a cursor over a locking read (its rows are fetched later, so the claim cannot be checked against them)"
	case "SELECT", "WITH", "VALUES", "TABLE":
		return "a locking read inside a subquery or WITH list"
	}
	return "a locking read inside " + strings.ToUpper(strings.TrimSpace(head+" statement"))
}

// lockText is the locking clause at sig[i] as written, upper-cased.
func (p *parser) lockText(i int) string {
	n := p.lockLen(i)
	words := make([]string, 0, n)
	for k := i; k < i+n; k++ {
		words = append(words, strings.ToUpper(p.text(p.sig[k])))
	}
	return strings.Join(words, " ")
}

// intoAt returns the sig index of a top-level INTO in sig[from:to] (SELECT … INTO
// variables, a new table or a file), or -1.
func (p *parser) intoAt(from, to int) int {
	depth := 0
	for i := from; i < to && i < len(p.sig); i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
		case depth == 0 && p.kw(i, "INTO"):
			return i
		}
	}
	return -1
}

// unwrapped returns the sig range [lo, hi) of the statement inside parentheses that
// wrap all of it (a trailing ';' left out); ok is false when they do not.
func (p *parser) unwrapped() (lo, hi int, ok bool) {
	hi = len(p.sig)
	if hi > 0 && p.punct(hi-1, ";") {
		hi--
	}
	for lo < hi && p.punct(lo, "(") && p.matching(lo) == hi-1 {
		lo++
		hi--
		ok = true
	}
	return lo, hi, ok && lo < hi
}

// inner is a parser over sig[lo:hi] of the same text: placeholders and byte offsets
// stay those of the caller's statement.
func (p *parser) inner(lo, hi int) *parser {
	q := *p
	q.sig = p.sig[lo:hi]
	q.start = 0
	return &q
}

// withNames returns the names the WITH list at sig[first] defines, lower-cased.
func (p *parser) withNames(first, main int) []string {
	var names []string
	depth := 0
	for i := first + 1; i < main; i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
		case depth == 0 && p.isIdent(i) && (p.kw(i-1, "WITH") || p.kw(i-1, "RECURSIVE") || p.punct(i-1, ",")):
			if n, ok := p.ident(i); ok {
				names = append(names, strings.ToLower(n))
			} else {
				names = append(names, "\x00")
			}
		}
	}
	return names
}

// lockThroughEnds end a FROM list: after one, a comma no longer separates relations.
var lockThroughEnds = map[string]bool{
	"WHERE": true, "GROUP": true, "HAVING": true, "ORDER": true, "LIMIT": true, "OFFSET": true,
	"FOR": true, "LOCK": true, "UNION": true, "INTERSECT": true, "EXCEPT": true, "WINDOW": true,
	"FETCH": true, "RETURNING": true, "INTO": true, "SET": true, "VALUES": true, "SELECT": true,
}

// lockThrough returns the relations a statement that holds a locking clause reads, on
// a pool with guarded tables (Plan.LockThrough): every name after FROM, JOIN or
// STRAIGHT_JOIN, after a comma of a FROM list, or after TABLE, at any depth, each once
// by its text; nil when the statement holds no locking clause. A name followed by '('
// is a function call, not a relation, and is left out.
func (p *parser) lockThrough() []Relation {
	if len(p.rw.names) == 0 || p.inBody || p.anyLock(0, len(p.sig)) < 0 {
		return nil
	}
	var out []Relation
	seen := map[string]bool{}
	add := func(i int) {
		// What may stand before a relation's name: ONLY, LATERAL, parentheses around it
		// or around a join (FROM ONLY (v), FROM (v a CROSS JOIN o)), MySQL's ODBC
		// { OJ … } and a leading dot (.v is the default database's v).
		for p.kwIn(i, "ONLY", "LATERAL", "OJ") || p.punct(i, "(") || p.punct(i, "{") || p.punct(i, ".") {
			i++
		}
		r, ok := p.parseName(i)
		if !ok || p.punct(r.end, "(") {
			return
		}
		words := make([]string, 0, r.end-r.first)
		for k := r.first; k < r.end; k++ {
			if !p.punct(k, ".") {
				words = append(words, p.text(p.sig[k]))
			}
		}
		text := strings.Join(words, ".")
		if !seen[text] {
			seen[text] = true
			out = append(out, Relation{Text: text, Parts: r.parts})
		}
	}
	for i := range p.sig {
		if !p.kwIn(i, "FROM", "JOIN", "STRAIGHT_JOIN", "TABLE") {
			continue
		}
		add(i + 1)
		if !p.kw(i, "FROM") {
			continue
		}
		// The rest of the FROM list: a name after each comma at this depth.
		depth := 0
	list:
		for k := i + 1; k < len(p.sig); k++ {
			switch {
			case p.punct(k, "("):
				depth++
			case p.punct(k, ")"):
				if depth--; depth < 0 {
					break list
				}
			case p.punct(k, ";"):
				break list
			case p.punct(k, ","):
				// At any depth: a parenthesised join list (FROM (v a, o b)); a comma of a
				// function's arguments or a subquery's select list adds a name that is
				// no view (a superset, which the catalog answers "no" for).
				add(k + 1)
			case depth == 0 && p.sig[k].Kind == sqllex.KindWord && lockThroughEnds[strings.ToUpper(p.text(p.sig[k]))]:
				break list
			}
		}
	}
	return out
}
