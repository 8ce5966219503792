package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// parser walks the significant tokens of one statement.
type parser struct {
	rw  *Planner
	src string
	all []sqllex.Token
	sig []sqllex.Token
	// start is the sig index of the statement's head keyword: 0, or the write after a
	// WITH list whose queries only read.
	start int
	// inBody: the text is a string literal's content that protect judges as SQL it may
	// be run as; depth counts the literals it is nested in.
	inBody bool
	// expanded: the text is a statement with its executable comments written out
	// (protect), judged again for what their content says.
	expanded bool
	depth    int
	// readPlanned: lockingRead planned the statement, and judged its locking clauses.
	readPlanned bool
	// shownOnly: the statement is an EXPLAIN that does not run what it explains.
	shownOnly bool
	// savepoint: control met SAVEPOINT, RELEASE or ROLLBACK TO (savepoint.go).
	savepoint bool
	// implicitCommit: control met a statement that commits the open transaction on
	// MySQL/MariaDB (implicitcommit.go).
	implicitCommit bool
	// runsDynamic: the statement runs dynamic SQL that WithDynamicSQL allowed
	// (Plan.Dynamic).
	runsDynamic bool
	// own (INSERT, single-table UPDATE): the target table as the statement writes it
	// (owntarget.go), which a qualified fencing column must name to be dropped.
	own ownTarget
	// aliasTargets: the sig indices of the targets of a MySQL/MariaDB multi-table
	// DELETE that multiDelete resolved to an unguarded table through an alias of the
	// table list, spelled like a guarded table or not; the backstop does not read them
	// as the guarded table's name (red-team rt47f F2).
	aliasTargets []int
	// stampNoop: plan an ON DUPLICATE KEY UPDATE of self-assignments with the fencing
	// assignments (the form Plan.Stamped holds), not as a no-op.
	stampNoop bool
}

func (p *parser) text(t sqllex.Token) string { return p.src[t.Start:t.End] }

func (p *parser) kw(i int, kw string) bool {
	return i >= 0 && i < len(p.sig) && sqllex.IsKeyword(p.src, p.sig[i], kw)
}

// kwIn reports whether sig[i] is one of the keywords.
func (p *parser) kwIn(i int, kws ...string) bool {
	for _, kw := range kws {
		if p.kw(i, kw) {
			return true
		}
	}
	return false
}

func (p *parser) punct(i int, s string) bool {
	return i < len(p.sig) && p.sig[i].Kind == sqllex.KindPunct && p.text(p.sig[i]) == s
}

func (p *parser) isIdent(i int) bool {
	if i >= len(p.sig) {
		return false
	}
	switch p.sig[i].Kind {
	case sqllex.KindWord, sqllex.KindQuotedIdent:
		return true
	case sqllex.KindString:
		return p.rw.stringIdents && p.src[p.sig[i].Start] == '\''
	}
	return false
}

// ident returns the identifier sig[i] names; ok is false when it cannot be decoded
// (the caller then fails closed).
func (p *parser) ident(i int) (string, bool) {
	t := p.sig[i]
	if t.Kind == sqllex.KindString {
		txt := p.text(t)
		if len(txt) < 2 || txt[0] != '\'' || txt[len(txt)-1] != '\'' {
			return "", false
		}
		return strings.ReplaceAll(txt[1:len(txt)-1], "''", "'"), true
	}
	name, _, ok := sqllex.Ident(p.src, t)
	return name, ok
}

// fenceColumn decodes the identifier sig[i] and reports whether it names g's token or
// version column as the server resolves it (Planner.isFenceColumn); ok is false when it
// cannot be decoded (the caller then fails closed).
func (p *parser) fenceColumn(g *Table, i int) (name string, fence, ok bool) {
	t := p.sig[i]
	quoted := t.Kind == sqllex.KindQuotedIdent || t.Kind == sqllex.KindString
	name, ok = p.ident(i)
	return name, ok && p.rw.isFenceColumn(g, name, quoted), ok
}

// mentionsGuard reports whether any identifier token names a guarded table.
func (p *parser) mentionsGuard() bool { return p.firstGuard() != "" }

// firstGuard returns the first guarded table an identifier token names, or "".
func (p *parser) firstGuard() string {
	for i := range p.sig {
		if p.isIdent(i) {
			if n, ok := p.ident(i); ok {
				if gs := p.rw.guards[p.rw.Key(n)]; gs != nil {
					return gs[0].String()
				}
			}
		}
	}
	return ""
}

func (p *parser) hasWord(words ...string) bool {
	for i := range p.sig {
		for _, w := range words {
			if p.kw(i, w) {
				return true
			}
		}
	}
	return false
}

func (p *parser) hasUndecodableIdent() bool {
	for i, t := range p.sig {
		if t.Kind == sqllex.KindQuotedIdent {
			if _, ok := p.ident(i); !ok {
				return true
			}
		}
	}
	return false
}

// tableRef is a parsed table reference: [schema.]name [[AS] alias].
type tableRef struct {
	parts      []string // unquoted parts as written
	first, end int      // sig index of the first token and one past the name (before the alias)
	alias      string   // as written (quoted text kept), "" if none
	aliasEnd   int      // sig index one past the alias (== end when none)
}

// parseName reads ident ('.' ident)* at sig[i]. A name cannot start with an unquoted
// keyword that no dialect accepts as a table name (notTableName): "INSERT INTO INTO t"
// is not a write of a table called INTO, and callers fail closed on it.
func (p *parser) parseName(i int) (tableRef, bool) {
	var r tableRef
	r.first = i
	if i < len(p.sig) && p.sig[i].Kind == sqllex.KindWord && notTableName[strings.ToUpper(p.text(p.sig[i]))] {
		return r, false
	}
	for {
		if !p.isIdent(i) {
			return r, false
		}
		n, ok := p.ident(i)
		if !ok {
			return r, false
		}
		r.parts = append(r.parts, n)
		i++
		if p.punct(i, ".") {
			i++
			continue
		}
		break
	}
	r.end, r.aliasEnd = i, i
	return r, true
}

// parseTarget reads the target of an UPDATE or DELETE, or the table of a claimed locking
// read, at sig[i] (after the modifiers, or FROM [ONLY]): a name (parseName) or, on
// PostgreSQL after ONLY, the same name in parentheses, `ONLY ( name )`, which
// PostgreSQL reads as `ONLY name` (red-team rt34c F4: refused as a shape the rewriter
// does not know). The name ends before the ")" and the alias, if any, follows it; the
// statement is copied as written.
func (p *parser) parseTarget(i int) (tableRef, bool) {
	if p.rw.numbered && p.kw(i-1, "ONLY") && p.punct(i, "(") {
		r, ok := p.parseName(i + 1)
		if !ok || !p.punct(r.end, ")") {
			return r, false
		}
		r.aliasEnd = r.end + 1
		return r, true
	}
	return p.parseName(i)
}

// notTableName lists unquoted words that cannot start a table reference: reserved
// words of PostgreSQL, MySQL/MariaDB or SQLite, and the statement modifiers each write
// accepts before its table. Seeing one where a table name belongs means the statement
// has a shape the parser does not know.
var notTableName = map[string]bool{
	"ALL": true, "AND": true, "AS": true, "BETWEEN": true, "BY": true, "CASE": true,
	"CROSS": true, "DEFAULT": true, "DELAYED": true, "DELETE": true, "DISTINCT": true,
	"ELSE": true, "END": true, "EXCEPT": true, "EXISTS": true, "FOR": true, "FROM": true,
	"FULL": true, "GROUP": true, "HAVING": true, "HIGH_PRIORITY": true, "IGNORE": true,
	"IN": true, "INNER": true, "INSERT": true, "INTERSECT": true, "INTO": true, "IS": true,
	"JOIN": true, "LEFT": true, "LIKE": true, "LIMIT": true, "LOW_PRIORITY": true,
	"NATURAL": true, "NOT": true, "NULL": true, "OFFSET": true, "ON": true, "ONLY": true,
	"OR": true, "ORDER": true, "OUTER": true, "QUICK": true, "REPLACE": true,
	"RETURNING": true, "RIGHT": true, "SELECT": true, "SET": true, "STRAIGHT_JOIN": true,
	"TABLE": true, "THEN": true, "UNION": true, "UPDATE": true, "USING": true,
	"VALUES": true, "WHEN": true, "WHERE": true, "WITH": true, "LATERAL": true,
}

// parseAlias reads an optional [AS] alias after a table name; stop lists the words that
// end the table reference instead.
func (p *parser) parseAlias(r *tableRef, stop ...string) {
	i := r.aliasEnd
	if p.kw(i, "AS") {
		if p.isIdent(i + 1) {
			r.alias = p.text(p.sig[i+1])
			r.aliasEnd = i + 2
		}
		return
	}
	if !p.isIdent(i) {
		return
	}
	for _, s := range stop {
		if p.kw(i, s) {
			return
		}
	}
	r.alias = p.text(p.sig[i])
	r.aliasEnd = i + 1
}

// descendants reads PostgreSQL's `*` after a table name (`UPDATE accounts * SET`, the
// old spelling of "the table and its descendants", which is what a name without ONLY
// means anyway; PostgreSQL only): the alias, if any, follows it, and the name still ends before it (the
// columns are qualified by the name, not by the `*`: red-team rt27a F1, F2).
func (p *parser) descendants(r *tableRef) {
	if p.rw.numbered && r.aliasEnd == r.end && p.punct(r.end, "*") {
		r.aliasEnd = r.end + 1
	}
}

// qualifier is the name that qualifies the target's columns inside the statement.
func (p *parser) qualifier(r tableRef) string {
	if r.alias != "" {
		return r.alias
	}
	return p.text(p.sig[r.end-1])
}

// clauseEnd returns the sig index of the first top-level token at or after i that is one
// of the words, a ';', or len(sig).
func (p *parser) clauseEnd(i int, words ...string) int {
	depth := 0
	for ; i < len(p.sig); i++ {
		t := p.sig[i]
		if t.Kind == sqllex.KindPunct {
			switch p.text(t) {
			case "(":
				depth++
			case ")":
				depth--
			case ";":
				if depth == 0 {
					return i
				}
			}
			continue
		}
		if depth == 0 {
			for _, w := range words {
				if p.kw(i, w) {
					return i
				}
			}
		}
	}
	return i
}

// checkParams refuses placeholder forms the rewriter cannot renumber (SQLite ?NNN, :name).
func (p *parser) checkParams(g *Table) (int, error) {
	n := 0
	for i, t := range p.sig {
		switch t.Kind {
		case sqllex.KindPunct:
			if i > 0 && p.text(t) == "-" && p.text(p.sig[i-1]) == "-" && p.sig[i-1].End == t.Start &&
				(i == len(p.sig)-1 || p.sig[i+1].Start != t.End) {
				// MySQL reads "--" as a comment only before a space or the end (here a
				// comment or the end follows it); the rewrite copies clauses without
				// what follows them and could make one (FuzzPlan).
				return 0, unsupported(g.String(), "two '-' written together ('--') before a comment or the end: write '- -'")
			}
		case sqllex.KindParam:
			if p.rw.numbered {
				if t.Num <= 0 {
					return 0, unsupported(g.String(), "placeholder %q", p.text(t))
				}
				n = max(n, t.Num)
			} else {
				if p.text(t) != "?" {
					return 0, unsupported(g.String(), "placeholder %q (only positional ? placeholders can be renumbered)", p.text(t))
				}
				n++
			}
		case sqllex.KindExecComment:
			return 0, unsupported(g.String(), "an executable comment (/*! … */) in a write to a guarded table")
		}
	}
	return n, nil
}

// endOf returns the byte offset just after the last significant token before sig[i].
func (p *parser) endOf(i int) int { return p.sig[i-1].End }

func (p *parser) nameAt(i int) []string {
	r, ok := p.parseName(i)
	if !ok {
		return nil
	}
	return r.parts
}

func (p *parser) mentionsGuardIn(from, to int) bool {
	for i := from; i < to && i < len(p.sig); i++ {
		if p.isIdent(i) {
			if n, ok := p.ident(i); ok && p.rw.guards[p.rw.Key(n)] != nil {
				return true
			}
		}
	}
	return false
}

// skipInto skips an optional INTO keyword.
func (p *parser) skipInto(i int) int {
	if p.kw(i, "INTO") {
		return i + 1
	}
	return i
}

// matching returns the sig index of the ')' that closes the '(' at i, or -1.
func (p *parser) matching(i int) int {
	depth := 0
	for k := i; k < len(p.sig); k++ {
		if p.sig[k].Kind != sqllex.KindPunct {
			continue
		}
		switch p.text(p.sig[k]) {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// balancedParens reports whether the statement's parentheses balance: every ")"
// closes a "(" before it, and none is left open. The planner wraps a caller's
// condition in parentheses ("(<condition>) AND …"): in a text such as
// "WHERE id = 1) OR (true" that would put the caller's OR outside them.
func (p *parser) balancedParens() bool {
	depth := 0
	for i := range p.sig {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}
