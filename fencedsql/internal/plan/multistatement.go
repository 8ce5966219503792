package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Multi-statement texts on MySQL/MariaDB (go-sql-driver's multiStatements=true). The
// server parses and runs the statements of one text one at a time, so a statement
// that changes how the server reads SQL — sql_mode (NO_BACKSLASH_ESCAPES,
// ANSI_QUOTES, ORACLE …) or the client character set (SET NAMES sjis: 0x95 0x5C is
// one character, not a backslash) — changes how it reads the statements after it in
// the same text. The planner reads the whole text once, as the session was when the
// text was sent (and the session check runs before the next guarded write, too late
// for this text): a string literal to the planner could be `'a\'` and then a hidden
// dynamic UPDATE to the server, and with interpolateParams=true an argument's data
// could run as SQL (red-team rt37e F1). PostgreSQL parses a whole simple-query
// message before it runs any of it; fencedpgx's batches have their own rule
// (batchSessionReason); SQLite has no setting that changes how it reads.
//
// So, on MySQL/MariaDB (the syntax with executable comments), a text in
// which a statement that may change the reading settings (readingChange) is followed
// by another statement is refused (ErrUnsupported) before anything is sent: send the
// setting alone, or as the text's last statement.

// readingChangeFollowed returns the refusal of sql, or nil.
func (rw *Planner) readingChangeFollowed(sql string) error {
	if !rw.syn.ExecComments || strings.IndexByte(sql, ';') < 0 {
		return nil
	}
	toks, err := sqllex.Lex(sql, rw.syn)
	if err != nil {
		return nil // judged, and refused where it matters, by the statement's own plan
	}
	p := &parser{rw: rw, src: sql, all: toks, sig: significant(sql, toks)}
	ends := p.statementEnds()
	start := 0
	for _, end := range ends {
		if end+1 < len(p.sig) && start < end && p.readingChange(start, end) {
			return unsupported("", "a statement that may change how the server reads SQL (%s) followed by other statements in one text: "+
				"the server reads the later statements under the new setting, the wrapper read them under the old one; send the setting alone, or as the text's last statement",
				strings.ToUpper(p.text(p.sig[start])))
		}
		start = end + 1
	}
	return nil
}

// statementEnds returns the sig indexes of the ';' that end a statement of the text:
// those outside parentheses and outside a compound statement's BEGIN … END (a stored
// program's body, BEGIN NOT ATOMIC, a labelled block: the server parses it whole, so
// its inner statements are read under one setting) and a CASE … END; the text's end
// is the last. END IF, END LOOP, END WHILE, END REPEAT and END FOR close blocks that
// are inside a BEGIN … END. An END with no opener left (an Oracle-mode package body,
// AS … END) is taken as closing nothing.
func (p *parser) statementEnds() []int {
	var ends []int
	parens, blocks := 0, 0
	for i := range p.sig {
		switch {
		case p.punct(i, "("):
			parens++
		case p.punct(i, ")"):
			parens--
		case parens != 0:
		case p.punct(i, ";") && blocks == 0:
			ends = append(ends, i)
		case p.kw(i, "CASE"):
			blocks++
		case p.kw(i, "BEGIN") && !p.kw(i-1, "XA") && i+1 < len(p.sig) && !p.punct(i+1, ";") && !p.kwIn(i+1, "WORK", "TRANSACTION"):
			blocks++
		case p.kw(i, "END") && !p.kwIn(i+1, "IF", "LOOP", "WHILE", "REPEAT", "FOR") && blocks > 0:
			blocks--
		}
	}
	return append(ends, len(p.sig))
}

// readingChange reports whether the statement sig[from:to] may change the session
// settings that decide how the server reads the statements after it: a SET of
// sql_mode, the character set (NAMES, CHARACTER SET, CHARSET, character_set_client)
// or a target it cannot read; dynamic SQL (PREPARE, EXECUTE), a compound statement
// (BEGIN NOT ATOMIC, a labelled block: its SETs stay after it), an executable
// comment, or any statement it does not know. Reads and writes, DDL (a routine's body
// is not run by its CREATE), transaction control, SHOW and CALL (a routine runs with
// its own sql_mode and character set, and the server restores the caller's) do not,
// nor does the END that closes an Oracle-mode package body.
func (p *parser) readingChange(from, to int) bool {
	for i := from; i < to; i++ {
		if p.sig[i].Kind == sqllex.KindExecComment {
			return true
		}
	}
	first := from
	for first < to-1 && p.punct(first, "(") {
		first++
	}
	if p.sig[first].Kind != sqllex.KindWord {
		return true
	}
	switch strings.ToUpper(p.text(p.sig[first])) {
	case "SELECT", "WITH", "VALUES", "TABLE", "INSERT", "REPLACE", "UPDATE", "DELETE", "END",
		"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "GRANT", "REVOKE",
		"START", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "LOCK", "UNLOCK",
		"SHOW", "DESCRIBE", "DESC", "EXPLAIN", "ANALYZE", "CHECK", "OPTIMIZE", "REPAIR",
		"USE", "DO", "CALL", "HANDLER", "LOAD", "FLUSH", "KILL", "XA":
		return false
	case "SET":
		return p.setChangesReading(first+1, to)
	}
	return true
}

// readingVariables are the session settings, and SET's shorthand words for them, that
// change how the server reads SQL text.
var readingVariables = map[string]bool{"sql_mode": true, "character_set_client": true, "names": true, "character": true, "charset": true}

// setChangesReading reports whether the assignments of a SET statement, sig[from:to],
// may set a reading setting: a target (first word of an assignment, after @@, a scope
// word or a scope prefix) in readingVariables, or one it cannot read. User variables
// (@name) change nothing the server reads by.
func (p *parser) setChangesReading(from, to int) bool {
	depth := 0
	at := true // at the start of an assignment
	for i := from; i < to; i++ {
		switch {
		case p.punct(i, "("):
			depth++
			continue
		case p.punct(i, ")"):
			depth--
			continue
		case depth != 0:
			continue
		case p.punct(i, ","):
			at = true
			continue
		case !at:
			continue
		}
		at = false
		if p.punct(i, "@") {
			continue // a user variable
		}
		k := i
		if p.punct(k, "@@") {
			k++
		}
		for p.kwIn(k, "SESSION", "GLOBAL", "LOCAL", "PERSIST", "PERSIST_ONLY") && k+1 < to {
			k++
			if p.punct(k, ".") {
				k++
			}
		}
		if !p.isIdent(k) {
			return true
		}
		name, ok := p.ident(k)
		if !ok || readingVariables[strings.ToLower(name)] {
			return true
		}
		if p.kw(i, "STATEMENT") {
			return false // SET STATEMENT … FOR: for its own statement only
		}
	}
	return false
}
