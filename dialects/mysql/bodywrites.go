package mysql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The door checks' one judgement of a stored body — a procedure's or function's
// (routines, tombRoutine), an event's (eventDoor), a trigger's (guardTables,
// otherTriggers) — as a writer of a table (red-team rt47b F1, F2). Functions and
// triggers can run neither dynamic SQL nor DDL (the server refuses both, error 1336
// and 1422), procedures and events can both: one rule for all, so that a body is
// judged the same wherever it is stored.

// bodyWrites reports whether the stored body src, read by syn's lexical rules (the
// callers judge every reading of the body's sql_mode: writesAsStored), may write the
// table name: a statement of it writes and names it (dialect.WritesTable; for a guard
// table — guard true: the tombstone table, the floor — dialect.WritesGuardTable, which
// counts DDL too: RENAME TABLE, DROP, ALTER … ENGINE, CREATE TABLE … LIKE, red-team
// rt47b F2), or its dynamic SQL may (dynamicTexts): the text of each PREPARE … FROM
// '<literal>' and EXECUTE IMMEDIATE '<literal>' is judged as a body of its own, and
// dynamic SQL whose text this cannot read (a variable, an expression, a statement
// prepared elsewhere) may write any table (red-team rt47b F1: PREPARE s FROM 'DELETE
// FROM fencedsql_tomb_acc' named the table only inside a string, with its write word).
// The content of an executable comment (/*! … */, /*!50000 … */, /*M! … */), which the
// server runs as code, is judged as code too: the body is judged as written and with
// those comments opened (openExecComments; a server that keeps them in the stored
// definition, red-team rt48b). A word test, not a parse: it errs on the side of yes,
// and it cannot see the body of a routine the body calls (that routine is judged
// itself; a CALL of the server's own mysql or sys routines counts as unreadable dynamic
// SQL, dynamicTexts).
func bodyWrites(src string, syn dialect.Syntax, name string, guard bool) bool {
	opened, ok := openExecComments(src, syn)
	if !ok {
		return true
	}
	if opened != src && bodyWrites(opened, syn, name, guard) {
		return true
	}
	if guard && dialect.WritesGuardTable(src, syn, name) || !guard && dialect.WritesTable(src, syn, name) {
		return true
	}
	texts, ok := dynamicTexts(src, syn)
	if !ok {
		return true
	}
	for _, t := range texts {
		if bodyWrites(t, syn, name, guard) {
			return true
		}
	}
	return false
}

// dynamicUnread reports whether the body src runs dynamic SQL whose text dynamicTexts
// cannot read under the default reading (it only chooses a door's note: the verdict
// is bodyWrites') (as written or with its executable comments opened), itself or in a
// text it runs (EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE @q'): such a body may write any
// table of any database its account reaches, and a door's problem says why it was
// taken for one.
func dynamicUnread(src string) bool {
	opened, ok := openExecComments(src, dialect.MySQLSyntax)
	if !ok {
		return true
	}
	for _, b := range []string{src, opened} {
		texts, ok := dynamicTexts(b, dialect.MySQLSyntax)
		if !ok {
			return true
		}
		for _, t := range texts {
			if dynamicUnread(t) {
				return true
			}
		}
	}
	return false
}

// dynamicUnreadNote is the note a door's problem carries when the body's dynamic SQL
// cannot be read (dynamicUnread), "" otherwise.
func dynamicUnreadNote(src string) string {
	if !dynamicUnread(src) {
		return ""
	}
	return " (its dynamic SQL — PREPARE … FROM or EXECUTE IMMEDIATE of a variable or an expression, EXECUTE of a statement it does not prepare from a literal before it on every path, or a CALL of a mysql or sys routine — cannot be read, and may write any table)"
}

// openExecComments returns src with each executable comment — /*! … */, /*!NNNNN … */,
// /*M! … */, /*M!NNNNNN … */, whose content MySQL and MariaDB run as code (the version
// number only says from which server version on) — replaced by its content, and src
// itself when it has none, src read by syn's lexical rules (the reading being judged:
// a bracket or a quote may end elsewhere under the body's sql_mode). ok is false when
// the result still holds one (a comment's content that opens another) or src cannot be
// lexed while it holds the marker: the caller takes such a body for a writer.
func openExecComments(src string, syn dialect.Syntax) (string, bool) {
	for range 4 {
		if !strings.Contains(src, "/*!") && !strings.Contains(src, "/*M!") && !strings.Contains(src, "/*m!") {
			return src, true
		}
		toks, err := dialect.LexDDL(src, syn)
		if err != nil {
			return src, false
		}
		var b strings.Builder
		last, opened := 0, false
		for _, t := range toks {
			inner, ok := execCommentContent(t)
			if !ok {
				continue
			}
			b.WriteString(src[last:t.Start])
			b.WriteString(" " + inner + " ")
			last, opened = t.End, true
		}
		if !opened {
			return src, true
		}
		b.WriteString(src[last:])
		src = b.String()
	}
	return src, false
}

// execCommentContent returns the code inside the executable comment token t, without
// its markers and version number; ok is false for any other token (an optimizer hint
// /*+ … */ included: its content is not run as a statement).
func execCommentContent(t dialect.DDLToken) (string, bool) {
	if t.Kind != dialect.DDLOther || !strings.HasSuffix(t.Text, "*/") {
		return "", false
	}
	s := t.Text
	switch {
	case strings.HasPrefix(s, "/*!"):
		s = s[3:]
	case len(s) >= 4 && strings.EqualFold(s[:4], "/*M!"):
		s = s[4:]
	default:
		return "", false
	}
	s = strings.TrimSuffix(s, "*/")
	return strings.TrimLeft(s, "0123456789"), true
}

// controlWords are the words after which a body's statements no longer run in
// straight-line order from its start: a branch (IF, CASE, WHEN, ELSE …), a loop, a
// handler (its statement runs when a condition is raised, anywhere in its block; also
// an Oracle-mode EXCEPTION section), a jump (LEAVE, ITERATE, RETURN, GOTO, EXIT,
// CONTINUE), or a routine of a package body (called on its own). IF EXISTS, FOR UPDATE,
// a CASE expression and the like count too: a word test errs on the side of yes.
var controlWords = []string{"IF", "CASE", "WHEN", "THEN", "ELSE", "ELSEIF", "ELSIF", "LOOP", "WHILE", "REPEAT", "UNTIL", "FOR",
	"HANDLER", "EXCEPTION", "LEAVE", "ITERATE", "RETURN", "GOTO", "EXIT", "CONTINUE", "PROCEDURE", "FUNCTION"}

// dynamicTexts returns the texts the body src, read by syn's lexical rules (the reading
// being judged), runs as dynamic SQL, and ok false when one of them cannot be read.
// Readable is only:
//   - PREPARE name FROM '<literal>' and EXECUTE IMMEDIATE '<literal>' [USING …], the
//     literal one string token ('…' or "…") without a backslash (whose meaning depends
//     on the routine's sql_mode, and which MariaDB's stored definition already decoded
//     once), ending the statement. A PREPARE is one wherever it stands when a name and
//     FROM follow it (red-team rt48b F3: after a handler's condition named xa or
//     deallocate, DECLARE CONTINUE HANDLER FOR xa PREPARE s FROM @q, it was taken for
//     XA PREPARE and skipped); only a PREPARE not so followed after DEALLOCATE, DROP or
//     XA (DEALLOCATE PREPARE name, DROP PREPARE name, XA PREPARE 'xid') runs no text;
//   - EXECUTE name [USING …] when the body prepares name from a literal before it in
//     straight-line order: a PREPARE of name earlier in the text and no control word
//     (controlWords) anywhere before the EXECUTE — so that every path to the EXECUTE
//     ran the PREPARE, which replaces (or, failing, drops) the session's statement of
//     that name (red-team rt48b F2: EXECUTE s before the body's PREPARE s, or with the
//     PREPARE in a branch that did not run or after a LEAVE, ran the statement its
//     caller prepared — prepared statements are the session's — with the routine's
//     DEFINER rights). The texts of all PREPAREs of name are judged (a handler's or a
//     branch's too).
//
// Anything else is not — PREPARE s FROM @q (anywhere, a handler's included), EXECUTE
// IMMEDIATE @q, CONCAT('…', '…'), ('…'), adjacent literals 'a' 'b', an introducer
// _utf8mb4'…', a hex literal, EXECUTE of a statement prepared by the caller or
// prepared only on some paths, the word EXECUTE anywhere else but in a privilege list
// of GRANT or REVOKE (EXECUTE ON, EXECUTE, …: a local variable of that name), a CALL of
// a routine of the server's own databases mysql or sys (CALL sys.execute_prepared_stmt
// runs its argument, mysql.DropGeometryColumn an ALTER TABLE of its arguments, with the
// caller's rights: those INVOKER routines are not judged themselves, routines) — nor a
// body the lexer cannot read that holds the word PREPARE or EXECUTE.
func dynamicTexts(src string, syn dialect.Syntax) (texts []string, ok bool) {
	toks, err := dialect.LexDDL(src, syn)
	if err != nil {
		return nil, !dialect.Mentions(src, "prepare") && !dialect.Mentions(src, "execute")
	}
	// ends reports whether toks[i] ends a statement: the end of the body, ";", or
	// (after EXECUTE's text or name) USING.
	ends := func(i int, using bool) bool {
		return i >= len(toks) || toks[i].Kind == dialect.DDLPunct && toks[i].Text == ";" || using && toks[i].Is("USING")
	}
	punct := func(i int, p string) bool {
		return i >= 0 && i < len(toks) && toks[i].Kind == dialect.DDLPunct && toks[i].Text == p
	}
	literal := func(i int) (string, bool) {
		if i >= len(toks) || toks[i].Kind != dialect.DDLString || strings.Contains(toks[i].Text, `\`) {
			return "", false
		}
		s := toks[i].Text
		q := s[0]
		if len(s) < 2 || q != '\'' && q != '"' || s[len(s)-1] != q {
			return "", false
		}
		return strings.ReplaceAll(s[1:len(s)-1], string(q)+string(q), string(q)), true
	}
	name := func(i int) (string, bool) {
		if i >= len(toks) || toks[i].Kind != dialect.DDLWord && toks[i].Kind != dialect.DDLQuoted {
			return "", false
		}
		n, ok := toks[i].Name()
		return strings.ToLower(n), ok
	}
	prepared := map[string]bool{} // names prepared from a literal so far
	straight := true              // no control word so far
	for i, t := range toks {
		prev := dialect.DDLToken{}
		if i > 0 {
			prev = toks[i-1]
		}
		for _, w := range controlWords {
			if t.Is(w) {
				straight = false
			}
		}
		switch {
		case t.Is("CALL"):
			if n, ok := name(i + 1); ok && (n == "sys" || n == "mysql") && punct(i+2, ".") {
				return nil, false
			}
		case t.Is("PREPARE"):
			n, okName := name(i + 1)
			if okName && i+2 < len(toks) && toks[i+2].Is("FROM") {
				text, okText := literal(i + 3)
				if !okText || !ends(i+4, false) {
					return nil, false
				}
				prepared[n] = true
				texts = append(texts, text)
				continue
			}
			if prev.Is("DEALLOCATE") || prev.Is("DROP") || prev.Is("XA") {
				continue
			}
			return nil, false
		case t.Is("EXECUTE"):
			if i+1 < len(toks) && toks[i+1].Is("IMMEDIATE") {
				text, okText := literal(i + 2)
				if !okText || !ends(i+3, true) {
					return nil, false
				}
				texts = append(texts, text)
				continue
			}
			if (prev.Is("GRANT") || prev.Is("REVOKE") || punct(i-1, ",")) && (i+1 < len(toks) && toks[i+1].Is("ON") || punct(i+1, ",")) {
				continue
			}
			n, okName := name(i + 1)
			if !okName || !ends(i+2, true) || !straight || !prepared[n] {
				return nil, false
			}
		}
	}
	return texts, true
}
