package plan

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// The guards guard themselves (docs/design.md, G15) and the session may not make the
// database forget acknowledged writes (G14). On a pool with guarded tables, whatever
// WithDDL and WithDynamicSQL allow, the wrapper refuses (protect):
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
//     fenced database and write it through the fenced pool;
//   - DDL that removes or disables guard objects without naming them: DROP SCHEMA …
//     CASCADE, DROP OWNED, REASSIGN OWNED, DROP EXTENSION … CASCADE, MySQL's DROP
//     SCHEMA/DATABASE (it drops every table of the database), ALTER TABLE … DISABLE
//     TRIGGER and ENABLE REPLICA/ALWAYS TRIGGER;
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

// protectedSetting is one session setting the wrapper refuses to change to anything
// but its safe values.
type protectedSetting struct {
	name string   // lower case
	safe []string // values (lower case, unquoted) that may be set; nil: any mention in a PRAGMA is refused
	why  string
}

// protectedSettings: one line per setting. A value the wrapper cannot read as a
// literal (a placeholder, an expression, DEFAULT, FROM CURRENT, RESET) is refused.
var protectedSettings = []protectedSetting{
	{"session_replication_role", []string{"origin", "local"}, "replica turns off the database-side guard and tombstone triggers (PostgreSQL)"},
	{"synchronous_commit", []string{"on", "true", "yes", "1", "remote_write", "remote_apply"}, "local or off acknowledges a commit no standby has: a failover forgets acknowledged writes (PostgreSQL)"},
	{"sql_log_bin", []string{"1", "on", "true"}, "0 keeps the session's writes out of the binary log: replicas never get them and a failover forgets them (MySQL/MariaDB)"},
	{"skip_replication", []string{"0", "off", "false"}, "replicas may filter the session's writes out: a failover forgets them (MariaDB)"},
	{"writable_schema", nil, "it lets the session rewrite sqlite_schema, the guard and tombstone triggers included (SQLite)"},
}

// protectNeedles are the words whose presence (ASCII case-insensitively) sends a
// statement to protect; the pre-filter scans for them in one pass.
var protectNeedles = func() []string {
	n := []string{guardPrefix, "pg_settings", "set_config"}
	for _, s := range protectedSettings {
		n = append(n, s.name)
	}
	return n
}()

// protectFirst marks the bytes (both cases) that start a needle.
var protectFirst = func() (t [256]bool) {
	for _, n := range protectNeedles {
		t[n[0]] = true
		t[n[0]&^0x20] = true
	}
	return t
}()

// mayProtect is the pre-filter of protect: false when the statement cannot be refused
// by it, so that the statement can pass without being tokenized. It does not allocate.
func (rw *Planner) mayProtect(sql string) bool {
	if len(rw.names) == 0 {
		return false
	}
	if rw.syn.ExecComments && strings.Contains(sql, "/*") {
		return true // an executable comment is judged by its content
	}
	return hasProtectNeedle(sql)
}

// hasProtectNeedle reports whether sql holds one of protectNeedles, ASCII
// case-insensitively.
func hasProtectNeedle(sql string) bool {
	for i := 0; i < len(sql); i++ {
		if !protectFirst[sql[i]] {
			continue
		}
		for _, n := range protectNeedles {
			if hasPrefixFold(sql[i:], n) {
				return true
			}
		}
	}
	return false
}

// hasPrefixFold reports whether s starts with prefix (ASCII lower case) ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for j := 0; j < len(prefix); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[j] {
			return false
		}
	}
	return true
}

// isGuardObject reports whether an (unquoted) identifier names a guard object: it
// starts with the reserved prefix, in any case, and is not the lock backend's.
func isGuardObject(name string) bool {
	return hasPrefixFold(name, guardPrefix) && !hasPrefixFold(name, lockTablePrefix)
}

// protect refuses what the guards and the protected settings need refused (see the
// comment at the top of this file). It runs on every statement that reaches the
// tokenizer on a pool with guarded tables, before any other analysis.
func (p *parser) protect() error {
	if len(p.rw.names) == 0 {
		return nil
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
	q := &parser{rw: p.rw, src: expanded, all: toks, sig: sqllex.Significant(toks)}
	return q.protectStatements()
}

// expandExecComments returns src with every executable comment replaced by its content
// (/*!50708 x */ → x), and false when there is none.
func expandExecComments(src string, toks []sqllex.Token) (string, bool) {
	var b strings.Builder
	last, found := 0, false
	for _, t := range toks {
		if t.Kind != sqllex.KindExecComment {
			continue
		}
		found = true
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
		for i := first; i < to; i++ {
			if p.kw(i, "DISABLE") && p.kw(i+1, "TRIGGER") || p.kw(i, "ENABLE") && p.kwIn(i+1, "REPLICA", "ALWAYS") {
				return unsupported(p.firstGuard(), "ALTER TABLE … %s %s on a pool with guarded tables: it can switch off the guard and tombstone triggers; run it on a plain connection", strings.ToUpper(p.text(p.sig[i])), strings.ToUpper(p.text(p.sig[i+1])))
			}
		}
	}
	return nil
}

// protectGuardObjects refuses a statement other than a plain read that names a guard
// object (or pg_settings), in an identifier or inside a string.
func (p *parser) protectGuardObjects(head string, from, to int) error {
	named, undecodable, call := "", false, false
	for i := from; i < to; i++ {
		t := p.sig[i]
		if p.isIdent(i) {
			n, ok := p.ident(i)
			if !ok {
				undecodable = undecodable || p.unicodeIdent(i)
			} else if isGuardObject(n) || strings.EqualFold(n, "pg_settings") {
				if named == "" {
					named = n
				}
				call = call || p.punct(i+1, "(") && isGuardObject(n)
			}
		}
		if t.Kind == sqllex.KindString && named == "" {
			if w := stringMentions(p.text(t), guardPrefix, "pg_settings"); w != "" {
				named = w
			}
		}
	}
	if named == "" && !undecodable {
		return nil
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

// protectSettings refuses a change of a protected setting.
func (p *parser) protectSettings(head string, from, to int) error {
	assigns := p.inBody || head == "SET" || head == "ALTER" || head == "CREATE" || head == "RESET"
	undecodable := false
	for i := from; i < to; i++ {
		if p.unicodeIdent(i) {
			undecodable = true
		}
	}
	for i := from; i < to; i++ {
		t := p.sig[i]
		if t.Kind == sqllex.KindString {
			if err := p.protectSettingString(i, undecodable); err != nil {
				return err
			}
			continue
		}
		if !p.isIdent(i) {
			continue
		}
		n, ok := p.ident(i)
		if !ok {
			if p.unicodeIdent(i) && assigns && (p.punct(i+1, "=") || p.punct(i+1, ":=") || p.kwIn(i+1, "TO", "FROM")) {
				return unsupported("", "a SET of a quoted name with escapes (U&\"…\"): it could be a protected setting")
			}
			continue
		}
		if strings.EqualFold(n, "set_config") && p.punct(i+1, "(") {
			if err := p.protectSetConfig(i + 2); err != nil {
				return err
			}
			continue
		}
		s := settingNamed(n)
		if s == nil {
			if ps := settingNamed(strings.TrimPrefix(strings.ToLower(n), "pragma_")); ps != nil && ps.safe == nil && hasPrefixFold(n, "pragma_") {
				return refuseSetting(ps)
			}
			continue
		}
		if s.safe == nil {
			if head == "PRAGMA" {
				return refuseSetting(s)
			}
			continue
		}
		if i > from && p.kw(i-1, "RESET") {
			return refuseSetting(s)
		}
		if !assigns {
			continue
		}
		switch {
		case p.punct(i+1, "=") || p.punct(i+1, ":=") || p.kw(i+1, "TO"):
			if !p.safeValueAt(i+2, to, s) {
				return refuseSetting(s)
			}
		case p.kw(i+1, "FROM"):
			return refuseSetting(s)
		}
	}
	return nil
}

// unicodeIdent reports whether sig[i] is a PostgreSQL U&"…" identifier, which the
// lexer does not decode.
func (p *parser) unicodeIdent(i int) bool {
	t := p.sig[i]
	return t.Kind == sqllex.KindQuotedIdent && t.End-t.Start > 2 && p.src[t.Start+1] == '&'
}

// safeValueAt reports whether sig[i] is one literal value among s's safe values and
// ends the assignment.
func (p *parser) safeValueAt(i, to int, s *protectedSetting) bool {
	if i >= to {
		return false
	}
	v, ok := p.literalAt(i)
	if !ok || !s.isSafe(v) {
		return false
	}
	// What follows must end the value: the statement, the next item, or a keyword.
	return i+1 >= to || p.punct(i+1, ";") || p.punct(i+1, ",") || p.sig[i+1].Kind == sqllex.KindWord
}

// literalAt returns the value a word, number, quoted identifier or plain string literal
// at sig[i] spells, lower-cased; ok is false for anything else.
func (p *parser) literalAt(i int) (string, bool) {
	t := p.sig[i]
	switch t.Kind {
	case sqllex.KindWord, sqllex.KindNumber:
		return strings.ToLower(p.text(t)), true
	case sqllex.KindQuotedIdent:
		n, ok := p.ident(i)
		return strings.ToLower(n), ok
	case sqllex.KindString:
		v, ok := plainString(p.text(t))
		return strings.ToLower(v), ok
	}
	return "", false
}

// plainString decodes a '…' or "…" literal without escapes; ok is false for any other
// form (E'…', U&'…', a backslash, dollar quotes, prefixes).
func plainString(txt string) (string, bool) {
	if len(txt) < 2 || strings.IndexByte(txt, '\\') >= 0 {
		return "", false
	}
	q := txt[0]
	if q != '\'' && q != '"' || txt[len(txt)-1] != q {
		return "", false
	}
	return strings.ReplaceAll(txt[1:len(txt)-1], string([]byte{q, q}), string(q)), true
}

func (s *protectedSetting) isSafe(v string) bool {
	for _, ok := range s.safe {
		if v == ok {
			return true
		}
	}
	return false
}

func settingNamed(n string) *protectedSetting {
	for i := range protectedSettings {
		if strings.EqualFold(n, protectedSettings[i].name) {
			return &protectedSettings[i]
		}
	}
	return nil
}

func refuseSetting(s *protectedSetting) error {
	if s.safe == nil {
		return unsupported("", "%s on a pool with guarded tables: %s", s.name, s.why)
	}
	return unsupported("", "a change of %s on a pool with guarded tables to anything but %s: %s",
		s.name, strings.Join(s.safe, ", "), s.why)
}

// protectSetConfig judges set_config(name, value, is_local) whose arguments start at
// sig[i]: the name must be a string literal; a protected one needs a safe literal value.
func (p *parser) protectSetConfig(i int) error {
	if i+1 >= len(p.sig) || p.sig[i].Kind != sqllex.KindString || !p.punct(i+1, ",") {
		return unsupported("", "set_config whose setting name is not a string literal on a pool with guarded tables: it could change a protected setting (session_replication_role, synchronous_commit, …)")
	}
	name, ok := plainString(p.text(p.sig[i]))
	if !ok {
		return unsupported("", "set_config whose setting name is written with escapes on a pool with guarded tables")
	}
	s := settingNamed(name)
	if s == nil {
		return nil
	}
	if i+3 < len(p.sig) && p.sig[i+2].Kind == sqllex.KindString && p.punct(i+3, ",") {
		if v, ok := plainString(p.text(p.sig[i+2])); ok && s.safe != nil && s.isSafe(strings.ToLower(v)) {
			return nil
		}
	}
	return refuseSetting(s)
}

// protectSettingString judges a string literal that mentions a guard object, a
// protected setting, set_config or pg_settings at identifier boundaries as the SQL it
// may be run as later (a function body, PREPARE text, a DO block, query_to_xml's
// query): its content is tokenized and checked like a statement, every assignment of a
// protected setting judged whatever the body's head. A literal that is exactly a
// setting's name (current_setting('…'), WHERE name = '…') passes, unless the statement
// holds an identifier the lexer cannot decode (it could be set_config). A body that
// cannot be tokenized, or that hides a mention in a quoted identifier (another
// language's string), is refused.
func (p *parser) protectSettingString(i int, undecodable bool) error {
	txt := p.text(p.sig[i])
	if v, ok := plainString(txt); ok && settingNamed(v) != nil {
		if undecodable {
			return unsupported("", "a protected setting's name next to a quoted identifier with escapes (U&\"…\"), which could be set_config")
		}
		return nil // set_config('…', …) is judged by protectSetConfig
	}
	w := stringMentions(txt, protectNeedles...)
	if w == "" {
		return nil
	}
	refuse := unsupported("", "a string that mentions %s on a pool with guarded tables, as a body or text that could change a guard object or a protected setting", w)
	if p.depth >= 4 {
		return refuse
	}
	body := stringBody(txt)
	toks, err := sqllex.Lex(body, p.rw.syn)
	if err != nil {
		return refuse
	}
	q := &parser{rw: p.rw, src: body, all: toks, sig: sqllex.Significant(toks), depth: p.depth + 1, inBody: true}
	for k := range q.sig {
		if q.sig[k].Kind == sqllex.KindQuotedIdent && stringMentions(q.text(q.sig[k]), protectNeedles...) != "" {
			return refuse
		}
	}
	return q.protectStatements()
}

// stringBody returns the text a string literal holds: a dollar-quoted body without its
// tags, a quoted literal without its quotes and prefix, doubled quotes undoubled and
// backslash escapes decoded loosely.
func stringBody(txt string) string {
	if strings.HasPrefix(txt, "$") {
		if k := strings.IndexByte(txt[1:], '$'); k >= 0 {
			tag := txt[:k+2]
			if len(txt) >= 2*len(tag) && strings.HasSuffix(txt, tag) {
				return txt[len(tag) : len(txt)-len(tag)]
			}
		}
		return txt
	}
	q := strings.IndexAny(txt, `'"`)
	if q < 0 || len(txt) < q+2 {
		return txt
	}
	quote := txt[q]
	inner := txt[q+1 : len(txt)-1]
	if strings.IndexByte(inner, '\\') >= 0 {
		inner = decodeLoose(txt[:q] + inner)[q:]
	}
	return strings.ReplaceAll(inner, string([]byte{quote, quote}), string(quote))
}

// stringMentions returns the first word (a prefix, for guardPrefix) that the string
// literal's text holds at an identifier boundary, after decoding backslash escapes
// loosely (E'…', U&'…', MySQL strings: more matches, never fewer), or "".
func stringMentions(txt string, words ...string) string {
	bodies := [2]string{strings.ToLower(txt), ""}
	if strings.IndexByte(txt, '\\') >= 0 {
		bodies[1] = strings.ToLower(decodeLoose(txt))
	}
	for _, body := range bodies {
		for _, w := range words {
			for at := 0; at < len(body); {
				k := strings.Index(body[at:], w)
				if k < 0 {
					break
				}
				k += at
				end := k + len(w)
				prefix := w == guardPrefix
				if !identByte(body, k-1) && (prefix || !identByte(body, end)) &&
					!(prefix && strings.HasPrefix(body[k:], lockTablePrefix)) {
					return w
				}
				at = k + 1
			}
		}
	}
	return ""
}

// decodeLoose decodes the backslash escapes of PostgreSQL's E'…' and U&'…' strings and
// MySQL's strings: \xHH, \ooo, \uXXXX, \UXXXXXXXX, \XXXX and \+XXXXXX (U&), \c → c.
func decodeLoose(s string) string {
	unicodeForm := len(s) > 2 && (s[0] == 'U' || s[0] == 'u') && s[1] == '&'
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		rest := s[i+1:]
		hex := func(n int, from int) (rune, bool) {
			if len(rest) < from+n {
				return 0, false
			}
			v, err := strconv.ParseUint(rest[from:from+n], 16, 32)
			return rune(v), err == nil
		}
		switch {
		case unicodeForm && rest[0] == '+':
			if r, ok := hex(6, 1); ok {
				b.WriteRune(r)
				i += 7
				continue
			}
		case unicodeForm:
			if r, ok := hex(4, 0); ok {
				b.WriteRune(r)
				i += 4
				continue
			}
		case rest[0] == 'x':
			n := 0
			for n < 2 && n+1 < len(rest) && strings.IndexByte("0123456789abcdefABCDEF", rest[n+1]) >= 0 {
				n++
			}
			if r, ok := hex(n, 1); ok && n > 0 {
				b.WriteRune(r)
				i += 1 + n
				continue
			}
		case rest[0] == 'u':
			if r, ok := hex(4, 1); ok {
				b.WriteRune(r)
				i += 5
				continue
			}
		case rest[0] == 'U':
			if r, ok := hex(8, 1); ok && utf8.ValidRune(r) {
				b.WriteRune(r)
				i += 9
				continue
			}
		case rest[0] >= '0' && rest[0] <= '7':
			n, v := 0, 0
			for n < 3 && n < len(rest) && rest[n] >= '0' && rest[n] <= '7' {
				v = v*8 + int(rest[n]-'0')
				n++
			}
			b.WriteByte(byte(v))
			i += n
			continue
		}
		b.WriteByte(rest[0])
		i++
	}
	return b.String()
}
