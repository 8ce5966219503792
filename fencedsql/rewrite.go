package fencedsql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// argRef says where one argument of a rewritten statement comes from: a user argument
// (its index, ≥ 0), the transaction's fencing token, or the expected version.
type argRef int32

const (
	argToken   argRef = -1
	argVersion argRef = -2
)

type stmtKind uint8

const (
	kindPass stmtKind = iota
	kindUpdate
	kindDelete
	kindInsert
)

func (k stmtKind) String() string {
	switch k {
	case kindUpdate:
		return "UPDATE"
	case kindDelete:
		return "DELETE"
	case kindInsert:
		return "INSERT"
	}
	return "statement"
}

// plan is the result of rewriting one statement text. Plans are immutable and cached.
type plan struct {
	kind  stmtKind // kindPass: send the user's text unchanged
	guard *guard
	sql   string
	args  []argRef // the rewritten statement's arguments, in placeholder order
	nUser int      // placeholders in the user's statement (its NumInput)
	pre   *plan    // DELETE: the fencing UPDATE that runs first, in the same transaction
	// resetsSession marks statements (SET … sql_mode) after which a connection's
	// session check must run again.
	resetsSession bool
}

var passPlan = &plan{kind: kindPass, nUser: -1}

// rewriter turns user SQL into fenced SQL for one set of guarded tables and one dialect.
type rewriter struct {
	syn      sqllex.Syntax
	numbered bool // $n placeholders (PostgreSQL) instead of positional ?
	quote    func(string) string
	strict   bool
	guards   map[string][]*guard // by lower-cased unqualified table name
	names    []string            // lower-cased guarded names, for the pre-filter
	nonASCII bool                // some guarded name is not ASCII: pre-filter with Unicode folding
	// stringIdents: a string literal may stand for an identifier (SQLite accepts
	// UPDATE 'accounts' …).
	stringIdents bool
}

// guard is one guarded table and its column names.
type guard struct {
	schema   string // lower-cased, "" for any
	name     string // as configured
	tokenCol string
	verCol   string
	// quoted column names, computed once
	qTok, qVer string
}

func (g *guard) String() string {
	if g.schema != "" {
		return g.schema + "." + g.name
	}
	return g.name
}

// rewrite plans one statement. versioned selects the ExpectVersion variant.
func (rw *rewriter) rewrite(sql string, versioned bool) (*plan, error) {
	if !rw.mayMention(sql) {
		if rw.setsSession(sql) {
			return &plan{kind: kindPass, nUser: -1, resetsSession: true}, nil
		}
		return passPlan, nil
	}
	toks, err := sqllex.Lex(sql, rw.syn)
	if err != nil {
		return nil, unsupported("", "the statement cannot be tokenized: %v", err)
	}
	p := &parser{rw: rw, src: sql, all: toks, sig: sqllex.Significant(toks)}
	return p.plan(versioned)
}

// mayMention is the fast pre-filter: a statement whose text contains no guarded table
// name (case-insensitively) cannot write one. PostgreSQL's U&"…" identifiers can spell a
// name with escapes, so their presence always forces a full analysis.
func (rw *rewriter) mayMention(sql string) bool {
	if rw.nonASCII {
		lower := strings.ToLower(sql)
		for _, n := range rw.names {
			if strings.Contains(lower, n) {
				return true
			}
		}
	}
	for _, n := range rw.names {
		if containsFold(sql, n) {
			return true
		}
	}
	return rw.numbered && (strings.Contains(sql, `U&"`) || strings.Contains(sql, `u&"`))
}

func (rw *rewriter) setsSession(sql string) bool {
	return !rw.numbered && containsFold(sql, "sql_mode")
}

// containsFold reports whether s contains sub (ASCII lower case) ignoring ASCII case.
func containsFold(s, sub string) bool {
	n := len(sub)
	if n == 0 {
		return true
	}
	first := sub[0]
	for i := 0; i+n <= len(s); i++ {
		c := s[i]
		if c|0x20 != first && c != first {
			continue
		}
		j := 1
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// parser walks the significant tokens of one statement.
type parser struct {
	rw  *rewriter
	src string
	all []sqllex.Token
	sig []sqllex.Token
}

func (p *parser) text(t sqllex.Token) string { return p.src[t.Start:t.End] }

func (p *parser) kw(i int, kw string) bool {
	return i < len(p.sig) && sqllex.IsKeyword(p.src, p.sig[i], kw)
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

// mentionsGuard reports whether any identifier token names a guarded table.
func (p *parser) mentionsGuard() bool { return p.firstGuard() != "" }

// firstGuard returns the first guarded table an identifier token names, or "".
func (p *parser) firstGuard() string {
	for i := range p.sig {
		if p.isIdent(i) {
			if n, ok := p.ident(i); ok {
				if gs := p.rw.guards[strings.ToLower(n)]; gs != nil {
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

var passKeywords = map[string]bool{
	"SELECT": true, "VALUES": true, "TABLE": true, "SHOW": true, "DESCRIBE": true, "DESC": true,
	"BEGIN": true, "START": true, "COMMIT": true, "ROLLBACK": true, "SAVEPOINT": true,
	"RELEASE": true, "END": true, "ABORT": true, "CREATE": true, "ALTER": true, "DROP": true,
	"COMMENT": true, "GRANT": true, "REVOKE": true, "VACUUM": true, "PRAGMA": true,
	"LOCK": true, "UNLOCK": true, "USE": true, "LISTEN": true, "UNLISTEN": true, "NOTIFY": true,
	"FETCH": true, "CLOSE": true, "DISCARD": true, "RESET": true, "REINDEX": true,
	"CLUSTER": true, "CHECKPOINT": true, "CALL": true, "EXECUTE": true,
	"DEALLOCATE": true, "DECLARE": true, "MOVE": true, "RENAME": true,
	"ATTACH": true, "DETACH": true, "FLUSH": true, "KILL": true, "OPTIMIZE": true,
	"CHECK": true, "REPAIR": true, "SET": true,
}

func (p *parser) plan(versioned bool) (*plan, error) {
	if len(p.sig) == 0 {
		return passPlan, nil
	}
	// MySQL executable comments (/*! … */) run their content: a write or a guarded
	// table inside one cannot be analysed, whatever surrounds it.
	if err := p.checkExecComments(); err != nil {
		return nil, err
	}
	// Multi-statement strings: anything significant after a top-level ';'.
	for i, t := range p.sig {
		if t.Kind == sqllex.KindPunct && p.text(t) == ";" && i+1 < len(p.sig) {
			if p.mentionsGuard() || p.hasUndecodableIdent() {
				return nil, unsupported(p.firstGuard(), "a multi-statement string that mentions a guarded table")
			}
			return p.pass(), nil
		}
	}
	// The head keyword, after any opening parentheses: "(WITH … UPDATE …)" is a
	// top-level statement too.
	first := 0
	for first < len(p.sig)-1 && p.punct(first, "(") {
		first++
	}
	head := strings.ToUpper(p.text(p.sig[first]))
	if p.sig[first].Kind != sqllex.KindWord {
		head = ""
	}
	if first > 0 && head != "SELECT" && head != "VALUES" && head != "TABLE" && head != "WITH" {
		return nil, unsupported(p.firstGuard(), "a parenthesised %s", strings.TrimSpace(head+" statement"))
	}
	switch head {
	case "PREPARE", "DO":
		// PostgreSQL PREPARE … AS <write>, MySQL PREPARE … FROM '<write>', DO blocks:
		// the statement text mentions a guarded table (the pre-filter said so) and may
		// hide a write in a string.
		return nil, unsupported(p.firstGuard(), "%s of a statement that mentions a guarded table", head)
	}
	// A quoted identifier the lexer cannot decode (PostgreSQL U&"…" escapes) could name
	// a guarded table: refuse it anywhere but in statements that cannot write.
	if p.hasUndecodableIdent() && !(passKeywords[head] && head != "SET") {
		return nil, unsupported("", "a quoted identifier with escapes (U&\"…\") in a statement that may write")
	}
	switch head {
	case "UPDATE":
		return p.update(versioned)
	case "DELETE":
		return p.delete(versioned)
	case "INSERT":
		return p.insert(versioned)
	case "EXPLAIN", "ANALYZE":
		// EXPLAIN ANALYZE (PostgreSQL) and ANALYZE (MariaDB) execute the write.
		if p.hasWord("INSERT", "UPDATE", "DELETE", "MERGE", "REPLACE") && p.mentionsGuard() {
			return nil, unsupported("", "%s of a write to a guarded table", head)
		}
		return p.pass(), nil
	case "WITH":
		if p.hasWriteInWith() && p.mentionsGuard() {
			return nil, unsupported("", "a data-modifying WITH (CTE) that mentions a guarded table")
		}
		return p.pass(), nil
	}
	if first > 0 {
		return p.pass(), nil // a parenthesised query
	}
	if passKeywords[head] {
		return p.pass(), nil
	}
	// TRUNCATE, COPY, LOAD, MERGE, REPLACE, UPSERT, HANDLER and anything unknown.
	if g := p.firstGuard(); g != "" {
		return nil, unsupported(g, "%s on a guarded table", strings.ToUpper(strings.TrimSpace(head+" statement")))
	}
	return p.pass(), nil
}

// checkExecComments refuses a statement whose executable comments could hold a write
// or name a guarded table, or that starts with one.
func (p *parser) checkExecComments() error {
	for i, t := range p.sig {
		if t.Kind != sqllex.KindExecComment {
			continue
		}
		body := p.text(t)
		bad := i == 0
		for _, w := range []string{"insert", "update", "delete", "replace", "merge", "truncate"} {
			bad = bad || containsFold(body, w)
		}
		for _, n := range p.rw.names {
			bad = bad || strings.Contains(strings.ToLower(body), n)
		}
		if bad {
			return unsupported(p.firstGuard(), "an executable comment (/*! … */) that may hold a write or name a guarded table")
		}
	}
	return nil
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

func (p *parser) pass() *plan {
	if p.rw.setsSession(p.src) {
		return &plan{kind: kindPass, nUser: -1, resetsSession: true}
	}
	return passPlan
}

// hasWriteInWith finds INSERT/UPDATE/DELETE/MERGE used as a statement inside a WITH,
// ignoring the locking clause "FOR [NO KEY] UPDATE".
func (p *parser) hasWriteInWith() bool {
	for i := range p.sig {
		switch {
		case p.kw(i, "INSERT"), p.kw(i, "DELETE"), p.kw(i, "MERGE"):
			return true
		case p.kw(i, "UPDATE"):
			if i > 0 && (p.kw(i-1, "FOR") || p.kw(i-1, "KEY")) {
				continue
			}
			return true
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

// parseName reads ident ('.' ident)* at sig[i].
func (p *parser) parseName(i int) (tableRef, bool) {
	var r tableRef
	r.first = i
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

// parseAlias reads an optional [AS] alias after a table name; stop lists the words that
// end the table reference instead.
func (p *parser) parseAlias(r *tableRef, stop ...string) {
	i := r.end
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

// lookup finds the guard for a table reference, if it is guarded.
func (rw *rewriter) lookup(parts []string) *guard {
	if len(parts) == 0 {
		return nil
	}
	gs := rw.guards[strings.ToLower(parts[len(parts)-1])]
	for _, g := range gs {
		if g.schema == "" || len(parts) < 2 || strings.EqualFold(parts[len(parts)-2], g.schema) {
			return g
		}
	}
	return nil
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

// checkAssignments refuses SET lists (sig[from:to]) that assign the fence or version
// column: `col = …`, `t.col = …` or `(a, col) = …` at top level.
func (p *parser) checkAssignments(g *guard, from, to int) error {
	depth := 0
	target := true // at the start of an assignment
	for i := from; i < to; i++ {
		t := p.sig[i]
		if t.Kind == sqllex.KindPunct {
			switch p.text(t) {
			case "(":
				depth++
				continue
			case ")":
				depth--
				continue
			case ",":
				if depth == 0 {
					target = true
				}
				continue
			case "=":
				if depth == 0 {
					target = false
				}
				continue
			}
		}
		if target && p.isIdent(i) {
			if n, ok := p.ident(i); ok && (strings.EqualFold(n, g.tokenCol) || strings.EqualFold(n, g.verCol)) {
				return reserved(g, n)
			}
		}
	}
	return nil
}

// checkParams refuses placeholder forms the rewriter cannot renumber (SQLite ?NNN, :name).
func (p *parser) checkParams(g *guard) (int, error) {
	n := 0
	for _, t := range p.sig {
		switch t.Kind {
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

// builder assembles rewritten SQL from slices of the source and inserted text, and the
// argument list in placeholder order.
type builder struct {
	p    *parser
	sb   strings.Builder
	refs []argRef
	// positional bookkeeping: index of the next user ? placeholder not yet copied
	userSeen int
	nUser    int
	tokN     string // "$n" for the token (numbered), "?" otherwise
	verN     string
	usedVer  bool
}

func (p *parser) newBuilder(nUser int) *builder {
	b := &builder{p: p, nUser: nUser}
	b.sb.Grow(len(p.src) + 160)
	if p.rw.numbered {
		b.tokN = "$" + strconv.Itoa(nUser+1)
		b.verN = "$" + strconv.Itoa(nUser+2)
	} else {
		b.tokN, b.verN = "?", "?"
	}
	return b
}

// copy appends src[from:to] and the user placeholders inside it.
func (b *builder) copy(from, to int) {
	b.sb.WriteString(b.p.src[from:to])
	if b.p.rw.numbered {
		return
	}
	for _, t := range b.p.sig {
		if t.Kind == sqllex.KindParam && t.Start >= from && t.End <= to {
			b.refs = append(b.refs, argRef(b.indexOf(t)))
		}
	}
}

// indexOf returns the user argument index of a positional placeholder token.
func (b *builder) indexOf(t sqllex.Token) int {
	i := 0
	for _, u := range b.p.sig {
		if u.Kind == sqllex.KindParam {
			if u.Start == t.Start {
				return i
			}
			i++
		}
	}
	return -1
}

func (b *builder) write(s string) { b.sb.WriteString(s) }

// gap writes a blank if the source text resuming at offset at does not start with
// one, so inserted text never glues onto the next keyword ("… END WHERE", not "ENDWHERE").
func (b *builder) gap(at int) {
	if at < len(b.p.src) {
		switch b.p.src[at] {
		case ' ', '\t', '\n', '\r', '\f', ';', ')', ',':
		default:
			b.sb.WriteByte(' ')
		}
	}
}
func (b *builder) token() { b.sb.WriteString(b.tokN); b.ref(argToken) }
func (b *builder) version() {
	b.sb.WriteString(b.verN)
	b.ref(argVersion)
	b.usedVer = true
}
func (b *builder) ref(r argRef) {
	if !b.p.rw.numbered {
		b.refs = append(b.refs, r)
	}
}

func (b *builder) finish(kind stmtKind, g *guard, _ bool) *plan {
	pl := &plan{kind: kind, guard: g, sql: b.sb.String(), nUser: b.nUser}
	if b.p.rw.numbered {
		pl.args = make([]argRef, 0, b.nUser+2)
		for i := range b.nUser {
			pl.args = append(pl.args, argRef(i))
		}
		pl.args = append(pl.args, argToken)
		if b.usedVer {
			pl.args = append(pl.args, argVersion)
		}
	} else {
		pl.args = b.refs
	}
	return pl
}

// assignments writes the fencing SET items: version first, then the token, because
// MySQL evaluates single-table assignments left to right and the version expression
// reads the old token. q qualifies column references ("" for none).
func (b *builder) assignments(g *guard, q string, versioned bool) {
	rw := b.p.rw
	ref := func(col string) string {
		if q == "" {
			return col
		}
		return q + "." + col
	}
	cmp := " <= "
	if rw.strict {
		cmp = " < "
	}
	b.write(g.qVer + " = ")
	if versioned {
		// Mismatched version with a valid token: NULL → NOT NULL violation on the version
		// column (ErrVersionConflict). A stale token is left to the token column.
		b.write("CASE WHEN " + ref(g.qVer) + " = ")
		b.version()
		b.write(" THEN " + ref(g.qVer) + " + 1 WHEN " + ref(g.qTok) + cmp)
		b.token()
		b.write(" THEN NULL ELSE " + ref(g.qVer) + " END")
	} else {
		b.write(ref(g.qVer) + " + 1")
	}
	b.write(", " + g.qTok + " = CASE WHEN " + ref(g.qTok) + cmp)
	b.token()
	b.write(" THEN ")
	b.token()
	b.write(" ELSE NULL END")
}

// endOf returns the byte offset just after the last significant token before sig[i].
func (p *parser) endOf(i int) int { return p.sig[i-1].End }

// startOf returns the byte offset of sig[i], or len(src) at the end.
func (p *parser) startOf(i int) int {
	if i < len(p.sig) {
		return p.sig[i].Start
	}
	return len(p.src)
}

func (p *parser) update(versioned bool) (*plan, error) {
	i := 1
	mysqlIgnore := false
	for {
		switch {
		case p.kw(i, "LOW_PRIORITY"), p.kw(i, "ONLY"):
			i++
			continue
		case p.kw(i, "IGNORE"):
			mysqlIgnore = true
			i++
			continue
		case p.kw(i, "OR") && p.isIdent(i+1):
			if p.rw.lookup(p.nameAt(i+2)) != nil && !p.kw(i+1, "ABORT") && !p.kw(i+1, "ROLLBACK") {
				return nil, unsupported(p.rw.lookup(p.nameAt(i+2)).String(), "UPDATE OR %s (it changes what a NOT NULL violation does)", strings.ToUpper(p.text(p.sig[i+1])))
			}
			i += 2
			continue
		}
		break
	}
	r, ok := p.parseName(i)
	if !ok {
		return p.unknownShape("UPDATE")
	}
	if p.punct(r.end, "*") {
		r.end++
		r.aliasEnd = r.end
	}
	p.parseAlias(&r, "SET", "INDEXED", "NOT")
	j := r.aliasEnd
	if p.kw(j, "INDEXED") || p.kw(j, "NOT") {
		for j < len(p.sig) && !p.kw(j, "SET") {
			j++
		}
	}
	g := p.rw.lookup(r.parts)
	if !p.kw(j, "SET") {
		// Multi-table UPDATE (MySQL: a, b / JOIN …).
		if g != nil || p.mentionsGuardIn(i, p.clauseEnd(i, "SET")) {
			return nil, unsupported(p.guardName(g, r), "a multi-table UPDATE")
		}
		return p.pass(), nil
	}
	if g == nil {
		return p.pass(), nil
	}
	if mysqlIgnore {
		return nil, unsupported(g.String(), "UPDATE IGNORE (it turns the fencing error into a warning)")
	}
	setStart := j + 1
	setEnd := p.clauseEnd(setStart, "FROM", "WHERE", "RETURNING", "ORDER", "LIMIT")
	for p.kw(setEnd, "FROM") && p.kw(setEnd-1, "DISTINCT") { // a IS [NOT] DISTINCT FROM b
		setEnd = p.clauseEnd(setEnd+1, "FROM", "WHERE", "RETURNING", "ORDER", "LIMIT")
	}
	if p.kw(setEnd, "FROM") {
		return nil, unsupported(g.String(), "UPDATE … FROM (a join can match a row several times)")
	}
	if setEnd == setStart {
		return nil, unsupported(g.String(), "an UPDATE with an empty SET list")
	}
	if err := p.checkAssignments(g, setStart, setEnd); err != nil {
		return nil, err
	}
	nUser, err := p.checkParams(g)
	if err != nil {
		return nil, err
	}
	b := p.newBuilder(nUser)
	at := p.endOf(setEnd)
	b.copy(0, at)
	b.write(", ")
	b.assignments(g, "", versioned)
	b.gap(at)
	b.copy(at, len(p.src))
	return b.finish(kindUpdate, g, versioned), nil
}

func (p *parser) nameAt(i int) []string {
	r, ok := p.parseName(i)
	if !ok {
		return nil
	}
	return r.parts
}

func (p *parser) guardName(g *guard, _ tableRef) string {
	if g != nil {
		return g.String()
	}
	return p.firstGuard()
}

func (p *parser) mentionsGuardIn(from, to int) bool {
	for i := from; i < to && i < len(p.sig); i++ {
		if p.isIdent(i) {
			if n, ok := p.ident(i); ok && p.rw.guards[strings.ToLower(n)] != nil {
				return true
			}
		}
	}
	return false
}

// unknownShape handles a write statement the parser does not recognise: refused when it
// mentions a guarded table, passed through otherwise.
func (p *parser) unknownShape(what string) (*plan, error) {
	if p.mentionsGuard() {
		return nil, unsupported("", "an %s of a shape the rewriter does not know", what)
	}
	return p.pass(), nil
}

func (p *parser) delete(versioned bool) (*plan, error) {
	i := 1
	ignore := false
	for {
		switch {
		case p.kw(i, "LOW_PRIORITY"), p.kw(i, "QUICK"):
			i++
			continue
		case p.kw(i, "IGNORE"):
			ignore = true
			i++
			continue
		}
		break
	}
	if !p.kw(i, "FROM") {
		// MySQL multi-table form: DELETE t1[, t2] FROM …
		if g := p.firstGuard(); g != "" {
			return nil, unsupported(g, "a multi-table DELETE")
		}
		return p.pass(), nil
	}
	i++
	if p.kw(i, "ONLY") {
		i++
	}
	r, ok := p.parseName(i)
	if !ok {
		return p.unknownShape("DELETE")
	}
	if p.punct(r.end, "*") {
		r.end++
		r.aliasEnd = r.end
	}
	p.parseAlias(&r, "WHERE", "USING", "RETURNING", "ORDER", "LIMIT", "INDEXED", "NOT")
	g := p.rw.lookup(r.parts)
	j := r.aliasEnd
	if p.kw(j, "INDEXED") || p.kw(j, "NOT") {
		j = p.clauseEnd(j, "WHERE", "RETURNING", "ORDER", "LIMIT")
	}
	if p.punct(j, ",") || p.kw(j, "USING") || p.kw(j, "JOIN") {
		if g != nil || p.mentionsGuardIn(i, p.clauseEnd(j, "WHERE")) {
			return nil, unsupported(p.guardName(g, r), "a multi-table DELETE")
		}
		return p.pass(), nil
	}
	if g == nil {
		return p.pass(), nil
	}
	if ignore {
		return nil, unsupported(g.String(), "DELETE IGNORE (it turns errors into warnings)")
	}
	nUser, err := p.checkParams(g)
	if err != nil {
		return nil, err
	}
	// Clauses after the table: WHERE, RETURNING, ORDER BY, LIMIT, in dialect order.
	clauses := map[string][2]int{} // keyword → [start, end) sig indexes
	k := j
	for k < len(p.sig) && !p.punct(k, ";") {
		var kw string
		for _, w := range []string{"WHERE", "RETURNING", "ORDER", "LIMIT"} {
			if p.kw(k, w) {
				kw = w
			}
		}
		if kw == "" {
			return nil, unsupported(g.String(), "DELETE with an unexpected clause %q", p.text(p.sig[k]))
		}
		end := p.clauseEnd(k+1, "WHERE", "RETURNING", "ORDER", "LIMIT")
		if _, dup := clauses[kw]; dup {
			return nil, unsupported(g.String(), "DELETE with two %s clauses", kw)
		}
		clauses[kw] = [2]int{k, end}
		k = end
	}
	if w, ok := clauses["WHERE"]; ok {
		if p.kw(w[0]+1, "CURRENT") && p.kw(w[0]+2, "OF") {
			return nil, unsupported(g.String(), "DELETE … WHERE CURRENT OF")
		}
		// The fencing UPDATE runs first and changes both columns, so a condition on
		// them would no longer match: use ExpectVersion instead.
		for k := w[0] + 1; k < w[1]; k++ {
			if p.isIdent(k) {
				if n, ok := p.ident(k); ok && (strings.EqualFold(n, g.tokenCol) || strings.EqualFold(n, g.verCol)) {
					return nil, unsupported(g.String(), "a DELETE whose WHERE reads %q (use fencedsql.ExpectVersion for a version check)", n)
				}
			}
		}
	}

	// 1. The fencing UPDATE over the same rows: it fails the whole statement (and so
	//    the DELETE) if any targeted row carries a newer token, and stamps our token on
	//    the others, which stay locked until the transaction ends.
	pre := p.newBuilder(nUser)
	pre.write("UPDATE ")
	pre.copy(p.sig[i].Start, p.endOf(j))
	pre.write(" SET ")
	pre.assignments(g, "", versioned)
	for _, kw := range []string{"WHERE", "ORDER", "LIMIT"} {
		if c, ok := clauses[kw]; ok {
			pre.write(" ")
			pre.copy(p.sig[c[0]].Start, p.endOf(c[1]))
		}
	}
	prePlan := pre.finish(kindUpdate, g, versioned)

	// 2. The DELETE, restricted to rows that now carry our token.
	b := p.newBuilder(nUser)
	if w, ok := clauses["WHERE"]; ok {
		if w[0]+1 >= w[1] {
			return nil, unsupported(g.String(), "DELETE with an empty WHERE")
		}
		if p.punct(w[0]+1, ".") {
			// "WHERE.5 …": the parenthesis the rewrite inserts would change how the
			// condition's first token reads ("(.5" is a number).
			return nil, unsupported(g.String(), "a DELETE whose WHERE is glued to a '.'")
		}
		exprStart, exprEnd := p.sig[w[0]+1].Start, p.endOf(w[1])
		b.copy(0, exprStart)
		b.write("(")
		b.copy(exprStart, exprEnd)
		b.write(") AND " + g.qTok + " = ")
		b.token()
		b.gap(exprEnd)
		b.copy(exprEnd, len(p.src))
	} else {
		at := p.endOf(j)
		b.copy(0, at)
		b.write(" WHERE " + g.qTok + " = ")
		b.token()
		b.gap(at)
		b.copy(at, len(p.src))
	}
	main := b.finish(kindDelete, g, false)
	main.pre = prePlan
	return main, nil
}

func (p *parser) insert(versioned bool) (*plan, error) {
	i := 1
	for {
		switch {
		case p.kw(i, "LOW_PRIORITY"), p.kw(i, "DELAYED"), p.kw(i, "HIGH_PRIORITY"):
			i++
			continue
		case p.kw(i, "IGNORE"):
			if p.rw.lookup(p.nameAt(p.skipInto(i+1))) != nil {
				return nil, unsupported(p.rw.lookup(p.nameAt(p.skipInto(i+1))).String(), "INSERT IGNORE (it turns the fencing error into a warning)")
			}
			i++
			continue
		case p.kw(i, "OR") && p.isIdent(i+1):
			if p.rw.lookup(p.nameAt(p.skipInto(i+2))) != nil && !p.kw(i+1, "ABORT") && !p.kw(i+1, "ROLLBACK") {
				return nil, unsupported(p.rw.lookup(p.nameAt(p.skipInto(i+2))).String(), "INSERT OR %s", strings.ToUpper(p.text(p.sig[i+1])))
			}
			i += 2
			continue
		}
		break
	}
	i = p.skipInto(i)
	r, ok := p.parseName(i)
	if !ok {
		return p.unknownShape("INSERT")
	}
	p.parseAlias(&r, "VALUES", "VALUE", "SET", "SELECT", "DEFAULT", "OVERRIDING", "PARTITION")
	g := p.rw.lookup(r.parts)
	if g == nil {
		return p.pass(), nil
	}
	nUser, err := p.checkParams(g)
	if err != nil {
		return nil, err
	}
	b := p.newBuilder(nUser)
	j := r.aliasEnd
	q := p.qualifier(r)

	if p.kw(j, "SET") { // MySQL: INSERT INTO t SET a = 1, b = 2
		end := p.clauseEnd(j+1, "ON", "RETURNING")
		if err := p.checkAssignments(g, j+1, end); err != nil {
			return nil, err
		}
		at := p.endOf(end)
		b.copy(0, at)
		b.write(", " + g.qTok + " = ")
		b.token()
		b.write(", " + g.qVer + " = 1")
		b.gap(at)
		return p.insertTail(b, g, q, end, at, versioned)
	}
	if !p.punct(j, "(") {
		return nil, unsupported(g.String(), "INSERT without a column list")
	}
	colEnd := p.matching(j)
	if colEnd < 0 {
		return nil, unsupported(g.String(), "INSERT with an unbalanced column list")
	}
	for k := j + 1; k < colEnd; k++ {
		if p.isIdent(k) {
			if n, ok := p.ident(k); ok && (strings.EqualFold(n, g.tokenCol) || strings.EqualFold(n, g.verCol)) {
				return nil, reserved(g, n)
			}
		}
	}
	if colEnd == j+1 {
		return nil, unsupported(g.String(), "INSERT with an empty column list")
	}
	b.copy(0, p.endOf(colEnd))
	b.write(", " + g.qTok + ", " + g.qVer)
	k := colEnd + 1
	if p.kw(k, "OVERRIDING") {
		k += 3
	}
	if !p.kw(k, "VALUES") && !p.kw(k, "VALUE") {
		return nil, unsupported(g.String(), "INSERT … SELECT or DEFAULT VALUES")
	}
	k++
	last := colEnd - 1 // sig index of the last token copied
	rows := 0
	for {
		if !p.punct(k, "(") {
			return nil, unsupported(g.String(), "INSERT with a VALUES list of an unknown shape")
		}
		end := p.matching(k)
		if end < 0 {
			return nil, unsupported(g.String(), "INSERT with an unbalanced VALUES row")
		}
		if end == k+1 {
			return nil, unsupported(g.String(), "INSERT with an empty VALUES row")
		}
		// Copy up to the row's last token, then add our two values.
		b.copy(p.sig[last].End, p.endOf(end))
		b.write(", ")
		b.token()
		b.write(", 1")
		last = end - 1
		rows++
		k = end + 1
		if p.punct(k, ",") {
			k++
			continue
		}
		break
	}
	return p.insertTail(b, g, q, k, p.sig[last].End, versioned)
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

// insertTail handles what follows the VALUES rows (or MySQL's SET list), starting at
// sig[k]: a MySQL row alias, ON CONFLICT, ON DUPLICATE KEY UPDATE, RETURNING. The
// source is copied into b up to byte offset from.
func (p *parser) insertTail(b *builder, g *guard, q string, k, from int, versioned bool) (*plan, error) {
	if p.kw(k, "AS") { // MySQL 8 row alias: VALUES (…) AS new [(a, b)]
		k += 2
		if p.punct(k, "(") {
			if e := p.matching(k); e > 0 {
				k = e + 1
			}
		}
	}
	switch {
	case p.kw(k, "ON") && p.kw(k+1, "CONFLICT"):
		doAt := p.clauseEnd(k+2, "DO")
		if !p.kw(doAt, "DO") {
			return nil, unsupported(g.String(), "ON CONFLICT without DO")
		}
		if p.kw(doAt+1, "NOTHING") {
			break
		}
		if !p.kw(doAt+1, "UPDATE") || !p.kw(doAt+2, "SET") {
			return nil, unsupported(g.String(), "ON CONFLICT of an unknown shape")
		}
		setStart := doAt + 3
		setEnd := p.clauseEnd(setStart, "WHERE", "RETURNING")
		if err := p.checkAssignments(g, setStart, setEnd); err != nil {
			return nil, err
		}
		at := p.endOf(setEnd)
		b.copy(from, at)
		b.write(", ")
		b.assignments(g, q, versioned)
		b.gap(at)
		b.copy(at, len(p.src))
		return b.finish(kindInsert, g, versioned), nil
	case p.kw(k, "ON") && p.kw(k+1, "DUPLICATE"):
		if !p.kw(k+2, "KEY") || !p.kw(k+3, "UPDATE") {
			return nil, unsupported(g.String(), "ON DUPLICATE of an unknown shape")
		}
		setStart := k + 4
		setEnd := p.clauseEnd(setStart, "RETURNING")
		if err := p.checkAssignments(g, setStart, setEnd); err != nil {
			return nil, err
		}
		at := p.endOf(setEnd)
		b.copy(from, at)
		b.write(", ")
		b.assignments(g, "", versioned)
		b.gap(at)
		b.copy(at, len(p.src))
		return b.finish(kindInsert, g, versioned), nil
	case k < len(p.sig) && !p.kw(k, "RETURNING") && !p.punct(k, ";"):
		return nil, unsupported(g.String(), "INSERT with an unexpected clause %q", p.text(p.sig[k]))
	}
	b.copy(from, len(p.src))
	return b.finish(kindInsert, g, versioned), nil
}

func unsupported(table, format string, args ...any) error {
	return &UnsupportedError{Table: table, Reason: fmt.Sprintf(format, args...)}
}

func reserved(g *guard, col string) error {
	return &UnsupportedError{Table: g.String(), Reason: fmt.Sprintf("the statement sets the reserved column %q itself; fencedsql maintains it", col)}
}
