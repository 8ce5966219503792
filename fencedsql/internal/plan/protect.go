package plan

import (
	"strings"
	"unicode/utf8"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// The guards guard themselves (docs/design.md, G15) and the session may not make the
// database forget acknowledged writes (G14). On a pool with guarded tables, whatever
// WithDDL and WithDynamicSQL allow, the wrapper refuses in the text it can read
// (protect) — SQL that dynamic SQL builds at run time ('SET sess' || 'ion_…', a hex
// literal given to EXECUTE IMMEDIATE) is unseen, which is why dynamic SQL is refused
// unless WithDynamicSQL allows it:
//
//   - every statement other than a plain read that names a guard object: an identifier
//     with the reserved prefix fencedsql_ (any case, quoted, backquoted or qualified),
//     that prefix at an identifier boundary inside a string literal or dollar-quoted
//     body (a function body, PREPARE … FROM '…', a DO block), an identifier the lexer
//     cannot decode (U&"…"), or PostgreSQL's pg_settings view. A plain read is a
//     SELECT, VALUES, TABLE, read-only WITH, SHOW, DESCRIBE, EXPLAIN (not ANALYZE),
//     PRAGMA, LISTEN/NOTIFY or cursor statement holding no write, INTO, locking clause
//     (FOR UPDATE/SHARE, LOCK IN SHARE MODE) or call of a guard function. The objects
//     of the SQL lock backend (lockclient/sqllock: fencedsql_locks and the objects
//     named after it) are not guard objects: that backend may keep its table in the
//     fenced database and write it through the fenced pool — but its token source
//     (lockTokenSource) may only be read;
//   - DDL that removes or disables guard objects without naming them: DROP SCHEMA …
//     CASCADE, DROP OWNED, REASSIGN OWNED, DROP EXTENSION … CASCADE, MySQL's DROP
//     SCHEMA/DATABASE (it drops every table of the database), ALTER TABLE … DISABLE
//     TRIGGER and ENABLE REPLICA/ALWAYS TRIGGER — and DDL that switches on a trigger
//     or rule of any relation (enableddl.go: ALTER TABLE … ENABLE TRIGGER/RULE,
//     PostgreSQL's ALTER EVENT TRIGGER … ENABLE), with or without WithDDL;
//   - statements that reach them by catalog, dependency, privilege or name resolution
//     (protect_reach.go): writes to the system catalogs (and to the relations through
//     which a write reaches one, and the DDL that makes such a relation:
//     protect_catalogview.go), PostgreSQL extensions,
//     languages, DROP … CASCADE of a type or function, ALTER TYPE … RENAME VALUE,
//     operators and casts, a database- or role-wide search_path, GRANT/REVOKE on all
//     tables of a schema or a database, server plugins, and on PostgreSQL a text whose
//     head is no statement keyword (a pgx prepared-statement name);
//   - a change of a protected setting (protectedSettings) by any spelling: SET
//     [SESSION|LOCAL|GLOBAL] name, SET @@[session.]name, ALTER DATABASE/ROLE/USER/SYSTEM/
//     FUNCTION … SET name, CREATE FUNCTION … SET name, RESET name, set_config('name', …)
//     (and set_config with a name that is not a string literal), a string that mentions
//     the name or set_config (a body or text that could set it), and MySQL executable
//     comments (/*! … */), whose content is judged as if written out.

// guardPrefix is the reserved prefix of every object the dialects' guards consist of;
// lockTablePrefix is the SQL lock backend's default table (sqllock.DefaultTable),
// which is not a guard object.
const (
	guardPrefix     = "fencedsql_"
	lockTablePrefix = "fencedsql_locks"
)

// isGuardObject reports whether an (unquoted) identifier names a guard object: it
// starts with the reserved prefix, in any case, and is not the lock backend's.
func isGuardObject(name string) bool {
	return hasPrefixFold(name, guardPrefix) && !hasPrefixFold(name, lockTablePrefix)
}

// lockTokenSource reports whether an (unquoted) identifier names the SQL lock
// backend's token source under the default table name: the sequence
// fencedsql_locks…_token_seq (PostgreSQL) or the counter table fencedsql_locks…_token
// (MySQL). The backend's other objects may be written through the fenced pool; its
// token source may only be read (a locking read included): set back, every later
// grant's token would be below tokens the database already accepted.
func lockTokenSource(name string) bool {
	if !hasPrefixFold(name, lockTablePrefix) {
		return false
	}
	n := strings.ToLower(name)
	return strings.HasSuffix(n, "_token") || strings.HasSuffix(n, "_token_seq")
}

// isGuardName is isGuardObject on the parser's dialect: MySQL/MariaDB compare routine
// names accent-insensitively (fencédsql_fence_t is fencedsql_fence_t to DROP
// FUNCTION), so there a name whose first characters may fold to the prefix counts too.
func (p *parser) isGuardName(name string) bool {
	return isGuardObject(name) || p.rw.syn == sqllex.MySQL && mayFoldToPrefix(name, guardPrefix)
}

// mayFoldToPrefix reports whether s starts with one character per byte of prefix
// (ASCII lower case), each the same letter in either case or a non-ASCII character
// (which a collation may fold to it), at least one of them non-ASCII.
func mayFoldToPrefix(s, prefix string) bool {
	nonASCII := false
	for k := 0; k < len(prefix); k++ {
		r, size := utf8.DecodeRuneInString(s)
		if size == 0 {
			return false
		}
		s = s[size:]
		switch {
		case r >= utf8.RuneSelf:
			nonASCII = true
		case r|0x20 != rune(prefix[k]) && r != rune(prefix[k]):
			return false
		}
	}
	return nonASCII
}

// HasFoldableGuardPrefix reports whether sql holds a name MySQL/MariaDB may fold to
// the guards' reserved prefix (isGuardName): the fuzz oracle's view of it.
func HasFoldableGuardPrefix(sql string) bool { return hasFoldablePrefix(sql, guardPrefix) }

// hasFoldablePrefix reports whether some position of sql starts a run mayFoldToPrefix
// accepts (the MySQL pre-filter's test for such names).
func hasFoldablePrefix(sql, prefix string) bool {
	for i := 0; i < len(sql); i++ {
		if c := sql[i]; (c >= utf8.RuneSelf || c|0x20 == prefix[0]) && mayFoldToPrefix(sql[i:], prefix) {
			return true
		}
	}
	return false
}

// protect refuses what the guards and the protected settings need refused (see the
// comment at the top of this file). It runs on every statement that reaches the
// tokenizer on a pool with guarded tables, before any other analysis.
func (p *parser) protect() error {
	if len(p.rw.names) == 0 {
		return nil
	}
	if err := p.protectUnicodeEscapes(); err != nil {
		return err
	}
	if err := p.protectStatements(); err != nil {
		return err
	}
	// Routine, trigger, rule and event DDL: unless WithDDL (routine.go).
	if err := p.protectRoutines(); err != nil {
		return err
	}
	// Executable comments: judge the text with their content written out.
	expanded, ok := expandExecComments(p.src, p.all)
	if !ok {
		return nil
	}
	toks, err := sqllex.Lex(expanded, p.rw.syn)
	if err != nil {
		if p.rw.mayProtect(strings.ReplaceAll(expanded, "/*", "")) {
			return unsupported("", "an executable comment (/*! … */) whose content cannot be read names a guard object or a protected setting")
		}
		return nil
	}
	q := &parser{rw: p.rw, src: expanded, all: toks, sig: significant(expanded, toks), expanded: true}
	return q.protectStatements()
}

// expandExecComments returns src with every executable comment replaced by its content
// (/*!50708 x */ → x) and every optimizer hint by a blank, and false when there is
// neither.
func expandExecComments(src string, toks []sqllex.Token) (string, bool) {
	var b strings.Builder
	last, found := 0, false
	for _, t := range toks {
		if t.Kind != sqllex.KindExecComment {
			continue
		}
		found = true
		if isHint(src, t) {
			// an optimizer hint is never statement text (hint.go): a blank
			b.WriteString(src[last:t.Start])
			b.WriteString(" ")
			last = t.End
			continue
		}
		body := src[t.Start+2 : t.End]
		body = strings.TrimSuffix(body, "*/")
		body = strings.TrimPrefix(body, "M")
		body = body[1:] // '!' or '+'
		body = strings.TrimLeft(body, "0123456789")
		b.WriteString(src[last:t.Start])
		b.WriteString(" ")
		b.WriteString(body)
		b.WriteString(" ")
		last = t.End
	}
	if !found {
		return "", false
	}
	b.WriteString(src[last:])
	return b.String(), true
}

// protectStatements applies the checks to each statement of the text.
func (p *parser) protectStatements() error {
	start := 0
	for i := 0; i <= len(p.sig); i++ {
		if i < len(p.sig) && !p.punct(i, ";") {
			continue
		}
		if start < i {
			if err := p.protectOne(start, i); err != nil {
				return err
			}
		}
		start = i + 1
	}
	return nil
}

// guardReadHeads are the statements that may name a guard object when they hold no
// write (guardWriteWords).
var guardReadHeads = map[string]bool{
	"SELECT": true, "VALUES": true, "TABLE": true, "WITH": true, "SHOW": true, "DESCRIBE": true,
	"DESC": true, "EXPLAIN": true, "PRAGMA": true, "LISTEN": true, "UNLISTEN": true, "NOTIFY": true,
	"FETCH": true, "MOVE": true, "CLOSE": true, "DEALLOCATE": true, "CHECKSUM": true, "HELP": true,
}

// statementHeads are further words that start a statement in a body (plpgsql
// included); a string whose content starts otherwise ('fencedsql_guard', a LIKE
// pattern) is a name, not a statement.
var statementHeads = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true, "REPLACE": true, "UPSERT": true,
	"TRUNCATE": true, "COPY": true, "LOAD": true, "PERFORM": true, "RETURN": true, "IF": true,
	"FOR": true, "LOOP": true, "WHILE": true, "REASSIGN": true, "ANALYZE": true,
}

// guardWriteWords make a statement that names a guard object more than a plain read.
var guardWriteWords = []string{"INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "TRUNCATE", "INTO", "SHARE", "LOCK", "ANALYZE", "COPY"}

// protectOne checks the statement sig[from:to].
func (p *parser) protectOne(from, to int) error {
	first := from
	for first < to-1 && p.punct(first, "(") {
		first++
	}
	head := ""
	if p.sig[first].Kind == sqllex.KindWord {
		head = strings.ToUpper(p.text(p.sig[first]))
	}
	if err := p.protectDDL(head, first, to); err != nil {
		return err
	}
	if err := p.protectReach(head, from, first, to); err != nil {
		return err
	}
	if err := p.protectMark(from, to); err != nil {
		return err
	}
	if !p.inBody || statementHeads[head] || readHeads[head] || ddlHeads[head] || controlHeads[head] || guardReadHeads[head] {
		if err := p.protectGuardObjects(head, from, to); err != nil {
			return err
		}
	}
	return p.protectSettings(head, from, to)
}

// protectDDL refuses the DDL that removes or disables guard objects without naming them.
func (p *parser) protectDDL(head string, first, to int) error {
	has := func(w string) bool {
		for i := first; i < to; i++ {
			if p.kw(i, w) {
				return true
			}
		}
		return false
	}
	switch head {
	case "DROP":
		switch {
		case p.kwIn(first+1, "SCHEMA", "DATABASE") && p.rw.syn.ExecComments:
			return unsupported("", "DROP %s on a pool with guarded tables: it drops every table of the database, with the guards", strings.ToUpper(p.text(p.sig[first+1])))
		case p.kwIn(first+1, "SCHEMA", "EXTENSION") && has("CASCADE"):
			return unsupported("", "DROP %s … CASCADE on a pool with guarded tables: it can drop guard objects without naming them; run it on a plain connection", strings.ToUpper(p.text(p.sig[first+1])))
		case p.kw(first+1, "OWNED"):
			return unsupported("", "DROP OWNED on a pool with guarded tables: it can drop guard objects without naming them; run it on a plain connection")
		}
	case "REASSIGN":
		if p.kw(first+1, "OWNED") {
			return unsupported("", "REASSIGN OWNED on a pool with guarded tables: it hands the guard objects to another role; run it on a plain connection")
		}
	case "ALTER":
		if p.kw(first+1, "SCHEMA") && has("RENAME") {
			// The guard functions name their floor table and its copy (a sequence, whose
			// name PostgreSQL generates for a serial column: t_col_seq) by schema: a
			// schema renamed and re-created with a planted copy would be read instead.
			return unsupported("", "ALTER SCHEMA … RENAME on a pool with guarded tables: the guards name their objects by schema, and a new schema under the old name could shadow them; run it on a plain connection")
		}
		for i := first; i < to; i++ {
			if p.kw(i, "DISABLE") && p.kw(i+1, "TRIGGER") || p.kw(i, "ENABLE") && p.kwIn(i+1, "REPLICA", "ALWAYS") {
				return unsupported(p.firstGuard(), "ALTER TABLE … %s %s on a pool with guarded tables: it can switch off the guard and tombstone triggers; run it on a plain connection", strings.ToUpper(p.text(p.sig[i])), strings.ToUpper(p.text(p.sig[i+1])))
			}
			if what, ok := p.switchesOn(first, i, to); ok {
				return unsupported(p.firstGuard(), "%s on a pool with guarded tables: it switches on a trigger or rule, whose body may write a guarded table, as CREATE TRIGGER or CREATE RULE would (which the pool refuses); run it on a plain connection, where the lazy check and schema.Check judge it", what)
			}
		}
	}
	return nil
}

// protectGuardObjects refuses a statement other than a plain read that names a guard
// object (or pg_settings), in an identifier or inside a string.
func (p *parser) protectGuardObjects(head string, from, to int) error {
	named, undecodable, call, source := "", false, false, ""
	for i := from; i < to; i++ {
		if p.isIdent(i) {
			n, ok := p.ident(i)
			if !ok {
				undecodable = undecodable || p.unicodeIdent(i)
			} else if lockTokenSource(n) && source == "" {
				source = n
			} else if p.isGuardName(n) || strings.EqualFold(n, "pg_settings") {
				if named == "" {
					named = n
				}
				call = call || p.punct(i+1, "(") && p.isGuardName(n)
			}
		}
	}
	for _, txt := range p.stringTexts(from, to) {
		if named != "" {
			break
		}
		named = stringMentions(txt, guardPrefix, "pg_settings")
	}
	if named == "" && !undecodable {
		return p.protectLockTokenSource(head, source, from, to)
	}
	read := guardReadHeads[head] && !call
	for i := from; read && i < to; i++ {
		read = !p.kwIn(i, guardWriteWords...) && !(p.kw(i, "REPLACE") && !p.punct(i+1, "("))
	}
	if read {
		return nil
	}
	if named == "" {
		return unsupported("", "a quoted identifier with escapes (U&\"…\") in a statement that may change objects: it could name a guard object")
	}
	what := strings.TrimSpace(head + " statement")
	if call {
		what = "a call of a guard function"
	}
	return unsupported("", "%s naming the guard object %q on a pool with guarded tables: the prefix %s is reserved for the database-side guards' tables, functions and triggers (and pg_settings for the session's settings), which a statement through the wrapper may only read; install or change the guards with fencedsql-schema on a plain connection",
		what, named, guardPrefix)
}

// protectLockTokenSource refuses a statement naming the lock backend's token source
// (lockTokenSource; source "" for none) unless it is a read, a locking read included
// (LastToken reads the counter LOCK IN SHARE MODE, after any grant in flight).
func (p *parser) protectLockTokenSource(head, source string, from, to int) error {
	if source == "" {
		return nil
	}
	read := guardReadHeads[head]
	for i := from; read && i < to; i++ {
		read = !p.kwIn(i, "INSERT", "DELETE", "MERGE", "UPSERT", "TRUNCATE", "INTO", "COPY", "ANALYZE") &&
			!(p.kw(i, "UPDATE") && !p.kw(i-1, "FOR")) && !(p.kw(i, "REPLACE") && !p.punct(i+1, "("))
	}
	if read {
		return nil
	}
	return unsupported("", "%s statement naming %q on a pool with guarded tables: it is the SQL lock backend's token source, which only grants may advance (set back, later grants would draw tokens below those the database accepted); create, raise (RaiseFloor, WithMinToken, lockfloor) or drop it on a plain connection", strings.TrimSpace(head), source)
}

// unicodeIdent reports whether sig[i] is a PostgreSQL U&"…" identifier, which the
// lexer does not decode.
func (p *parser) unicodeIdent(i int) bool {
	t := p.sig[i]
	return t.Kind == sqllex.KindQuotedIdent && t.End-t.Start > 2 && p.src[t.Start+1] == '&'
}
