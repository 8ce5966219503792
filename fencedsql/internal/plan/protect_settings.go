// The protected session settings and the checks that refuse a change of one.

package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect/sidechannel"
	"github.com/fencedsql/fencedsql/fencedsql/internal/sqlitepragma"
	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
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
	{"server_id", []string{}, "replicas ignore the events of their own server id: a failover forgets the session's writes (MariaDB)"},
	{"gtid_domain_id", []string{}, "replicas may filter the session's replication domain out: a failover forgets its writes (MariaDB)"},
	{"system_versioning_asof", []string{}, "every SELECT of a system-versioned table reads it as of that time, a claim's locking read included, while the claim's UPDATE stamps the current rows: the claim returns old values (MariaDB)"},
	{"wsrep_on", []string{"1", "on", "true"}, "0 keeps the session's writes on this Galera node: the cluster never gets them, and a failover forgets them (MariaDB)"},
	{"gtid_seq_no", []string{}, "a sequence number already used makes replicas skip the session's next transaction (MariaDB)"},
	{"timestamp", []string{}, "a clock set by hand dates the tombstones of the session's deletes (a purge then removes them early, and a deleted row can come back under an older token) and the one-statement DELETE's mark (MySQL/MariaDB)"},
	{"autocommit", []string{}, "0 opens a transaction the wrapper does not know of: the connection goes back to the pool inside it, and later writes report success and are never committed; use BeginTx (MySQL/MariaDB)"},
	{"completion_type", []string{"no_chain", "0"}, "CHAIN opens a transaction after every COMMIT the wrapper sends: the connection goes back to the pool inside it, and a later autocommit write reports success and is never committed; RELEASE closes the connection (MySQL/MariaDB)"},
	{"gtid_next", []string{"automatic"}, "a GTID already executed makes the server skip the session's statements, fenced writes included (MySQL)"},
	{"sql_select_limit", []string{"18446744073709551615"}, "a limit caps the wrapper's own reads of the records and the catalog: a shorter list of guarded tables, or none (MySQL/MariaDB)"},
	{"max_join_size", []string{"18446744073709551615"}, "a limit (it also clears sql_big_selects) makes the server refuse the wrapper's own checks of the session and of the schema, so later guarded writes on the pooled connection fail (MySQL/MariaDB)"},
	{"sql_big_selects", []string{"1", "on", "true"}, "0 makes the server refuse the wrapper's own checks of the session and of the schema when they exceed max_join_size, so later guarded writes on the pooled connection fail (MySQL/MariaDB)"},
	{"journal_mode", sqlitepragma.JournalModes(), "OFF removes the rollback journal: a failed statement or ROLLBACK no longer undoes a fenced transaction's writes (SQLite)"},
	// NORMAL is refused with WAL by the SQLite session check, which a PRAGMA re-arms
	// (MayChangeSession): the mode is the file's, not the statement's (red-team rt43b F2).
	{"synchronous", sqlitepragma.SynchronousLevels(), "OFF acknowledges commits the disk may not have: a crash forgets acknowledged writes (SQLite)"},
}

// protectSettings refuses a change of a protected setting.
func (p *parser) protectSettings(head string, from, to int) error {
	assigns := p.inBody || head == "SET" || head == "ALTER" || head == "CREATE" || head == "RESET" || head == "PRAGMA"
	undecodable := false
	for i := from; i < to; i++ {
		if p.unicodeIdent(i) {
			undecodable = true
		}
	}
	for i := from; i < to; i++ {
		t := p.sig[i]
		var n string
		if p.stringLike(i) {
			v, named := p.settingNameString(head, i)
			if !named {
				if err := p.protectSettingString(p.literalText(i), undecodable); err != nil {
					return err
				}
				// A run of adjacent literals is also judged joined, as the server
				// reads it ('SET synchronous'⏎'_commit = off' is one body).
				if (i == from || !p.stringLike(i-1)) && i+1 < to && p.stringLike(i+1) {
					end := i + 1
					for end < to && p.stringLike(end) {
						end++
					}
					texts := p.stringTexts(i, end)
					if err := p.protectSettingString(texts[len(texts)-1], undecodable); err != nil {
						return err
					}
				}
				continue
			}
			n = v
		} else if !p.isIdent(i) {
			continue
		} else if v, ok := p.ident(i); ok {
			n = v
		} else {
			if p.unicodeIdent(i) && p.calledAt(i) {
				return unsupported("", "a function called by a quoted name with escapes (U&\"…\") on a pool with guarded tables: it could be set_config, or a function that runs SQL text")
			}
			if p.unicodeIdent(i) && assigns && (p.punct(i+1, "=") || p.punct(i+1, ":=") || p.kwIn(i+1, "TO", "FROM")) {
				return unsupported("", "a SET of a quoted name with escapes (U&\"…\"): it could be a protected setting")
			}
			continue
		}
		if t.Kind != sqllex.KindString && p.punct(i+1, "(") && isSQLTextFunc(n) {
			if err := p.dynamic(n + "(…), which runs the SQL text it is given"); err != nil {
				return err
			}
		}
		if p.rw.syn == sqllex.Postgres && p.punct(i+1, "(") && (strings.EqualFold(n, "setval") || strings.EqualFold(n, "nextval")) {
			if err := p.protectSequenceCall(n, i+2); err != nil {
				return err
			}
			continue
		}
		if strings.EqualFold(n, "set_config") && p.punct(i+1, "(") {
			if err := p.protectSetConfig(i + 2); err != nil {
				return err
			}
			continue
		}
		if p.rw.syn == sqllex.Postgres && strings.EqualFold(n, "search_path") && assigns &&
			(p.punct(i+1, "=") || p.kw(i+1, "TO")) && !p.catalogFirstAt(i+2, to) {
			return refuseSearchPath()
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
		case head == "PRAGMA" && p.punct(i+1, "("): // PRAGMA name(value)
			if !p.punct(i+3, ")") || !p.safeValueAt(i+2, i+3, s) || i+4 < to && !p.punct(i+4, ";") {
				return refuseSetting(s)
			}
		}
	}
	return nil
}

// settingNameString reports whether the string literal at sig[i] names a protected
// setting in a statement that sets one (PRAGMA or SET): SQLite takes a string where a
// name is expected, so PRAGMA 'writable_schema' = 1 and PRAGMA main.'journal_mode' =
// OFF change the setting the string names. The string is then judged as that name.
func (p *parser) settingNameString(head string, i int) (string, bool) {
	if head != "PRAGMA" && head != "SET" {
		return "", false
	}
	v, ok := plainString(p.text(p.sig[i]))
	if !ok {
		return "", false
	}
	if settingNamed(v) != nil || hasPrefixFold(v, "pragma_") && settingNamed(strings.TrimPrefix(strings.ToLower(v), "pragma_")) != nil {
		return v, true
	}
	return "", false
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
	// What follows must end the value: the statement, the next item, or a keyword that
	// starts the next clause (MariaDB's SET STATEMENT … FOR, a routine's other options).
	// MySQL's SET takes an expression: an operator word (AND, XOR, IS, DIV …) after a
	// safe literal computes another value.
	return i+1 >= to || p.punct(i+1, ";") || p.punct(i+1, ",") || p.kwIn(i+1, afterSettingValue...)
}

// afterSettingValue are the keywords that may follow a protected setting's literal
// value: they start the next clause, never continue an expression.
var afterSettingValue = []string{"FOR", "AS", "SET", "RESET", "LANGUAGE", "RETURNS", "RETURN", "BEGIN",
	"IMMUTABLE", "STABLE", "VOLATILE", "STRICT", "SECURITY", "EXTERNAL", "COST", "ROWS", "SUPPORT",
	"PARALLEL", "LEAKPROOF", "CALLED", "WINDOW", "TRANSFORM"}

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
	if len(s.safe) == 0 {
		return unsupported("", "a change of %s on a pool with guarded tables (to any value): %s", s.name, s.why)
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
	if isGuardObject(name) {
		return unsupported("", "set_config of %s on a pool with guarded tables: the reserved prefix %s names the guards' settings (the one-statement DELETE's mark)", name, guardPrefix)
	}
	if p.rw.syn == sqllex.Postgres && strings.EqualFold(name, "search_path") {
		if i+3 < len(p.sig) && p.sig[i+2].Kind == sqllex.KindString && p.punct(i+3, ",") {
			if v, ok := plainString(p.text(p.sig[i+2])); ok && catalogFirst(strings.Split(v, ",")) {
				return nil
			}
		}
		return refuseSearchPath()
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
func (p *parser) protectSettingString(txt string, undecodable bool) error {
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
	q := &parser{rw: p.rw, src: body, all: toks, sig: significant(body, toks), depth: p.depth + 1, inBody: true}
	for k := range q.sig {
		if q.sig[k].Kind == sqllex.KindQuotedIdent && stringMentions(q.text(q.sig[k]), protectNeedles...) != "" {
			return refuse
		}
	}
	return q.protectStatements()
}

// sqlTextFuncs are PostgreSQL functions that run SQL text given as an argument, built
// at run time where the wrapper cannot read it ('SELECT set_con' || 'fig(…)'): dynamic
// SQL. query_to_xml* and ts_stat read only, but set_config runs in a read; dblink's
// senders (sidechannel.SQLTextSenders, the one list the door checks read too) write
// through a connection of their own.
var sqlTextFuncs = append([]string{"query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema",
	"ts_stat", "ts_rewrite"}, sidechannel.SQLTextSenders()...)

// surgeryFuncs are pg_surgery's functions (sidechannel.RowSurgeryFuncs), which change row
// versions in place without triggers, from a SELECT (red-team rt20t F5:
// heap_force_kill deleted the token floor's row through a read).
var surgeryFuncs = sidechannel.RowSurgeryFuncs()

// protectSurgery refuses a call of one of pg_surgery's functions in sig[first:to], in
// a statement or in a body (protectReach runs for both: red-team rt22a F4).
func (p *parser) protectSurgery(first, to int) error {
	if !p.rw.syn.DollarQuotes {
		return nil
	}
	for i := first; i < to && i < len(p.sig); i++ {
		if p.sig[i].Kind != sqllex.KindWord && p.sig[i].Kind != sqllex.KindQuotedIdent {
			continue
		}
		// By its name as the server reads it: "heap_force_kill"(…) is the same call
		// (red-team rt65a, the planner's part of F3); a U&"…" name the lexer cannot
		// decode could be either function.
		n, ok := p.ident(i)
		if !ok && p.unicodeIdent(i) && p.calledAt(i) {
			return unsupported("", "a function called by a quoted name with escapes (U&\"…\") on a pool with guarded tables: it could be one of pg_surgery's, which kill or freeze row versions without their triggers")
		}
		if ok && p.punct(i+1, "(") && isSurgeryFunc(n) {
			return unsupported("", "%s(…) on a pool with guarded tables: pg_surgery kills or freezes row versions without their triggers (a guarded row, a tombstone, the token floor's row), whatever the statement looks like", p.text(p.sig[i]))
		}
	}
	return nil
}

func isSurgeryFunc(n string) bool {
	for _, f := range surgeryFuncs {
		if strings.EqualFold(n, f) {
			return true
		}
	}
	return false
}

func isSQLTextFunc(n string) bool {
	for _, f := range sqlTextFuncs {
		if strings.EqualFold(n, f) {
			return true
		}
	}
	return false
}

// calledAt reports whether the identifier at sig[i] (a U&"…" one possibly followed by
// UESCAPE 'c') is called: an opening parenthesis follows.
func (p *parser) calledAt(i int) bool {
	j := i + 1
	if p.kw(j, "UESCAPE") {
		j += 2
	}
	return p.punct(j, "(")
}

// A PostgreSQL search_path that names pg_catalog after another schema makes the
// session resolve operators and functions in that schema first: an operator of the
// same name and types there (an always-true <= on bigint) would decide the wrapper's
// token comparisons. Without pg_catalog in the list, PostgreSQL searches it first, so
// only a path that lists it after another schema is refused; set_config's value must
// then be a plain literal the wrapper can read.

// catalogFirstAt reports whether the value list of a SET search_path starting at sig[i]
// (before to, a ';' or a keyword that ends the value) leaves pg_catalog first: it is
// absent, or the first item.
func (p *parser) catalogFirstAt(i, to int) bool {
	var items []string
	for ; i < to && !p.punct(i, ";") && !p.kwIn(i, afterSettingValue...); i++ {
		if p.punct(i, ",") {
			continue
		}
		v, ok := p.literalAt(i)
		if !ok {
			return false
		}
		items = append(items, v)
	}
	return catalogFirst(items)
}

// catalogFirst reports whether pg_catalog is absent from the search_path items or the
// first of them (items trimmed of spaces and double quotes, compared case-insensitively
// as unquoted names fold).
func catalogFirst(items []string) bool {
	for k, it := range items {
		it = strings.Trim(strings.TrimSpace(it), `"`)
		if strings.EqualFold(it, "pg_catalog") && k > 0 {
			return false
		}
	}
	return true
}

func refuseSearchPath() error {
	return unsupported("", "a search_path that lists pg_catalog after another schema (or a set_config of search_path whose value is not a plain literal) on a pool with guarded tables: an operator of that schema would decide the wrapper's token comparisons; leave pg_catalog out (it is then searched first) or list it first")
}
