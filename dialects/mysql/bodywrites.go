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
// table name: a
// statement of it writes and names it (dialect.WritesTable; for a guard table — guard
// true: the tombstone table, the floor — dialect.WritesGuardTable, which counts DDL
// too: RENAME TABLE, DROP, ALTER … ENGINE, CREATE TABLE … LIKE, red-team rt47b F2), or
// its dynamic SQL may (dynamicTexts): the text of each PREPARE … FROM '<literal>' and
// EXECUTE IMMEDIATE '<literal>' is judged as a body of its own, and dynamic SQL whose
// text this cannot read (a variable, an expression, a statement prepared elsewhere)
// may write any table (red-team rt47b F1: PREPARE s FROM 'DELETE FROM
// fencedsql_tomb_acc' named the table only inside a string, with its write word).
// A word test, not a parse: it errs on the side of yes, and it cannot see the body of
// a routine the body calls (that routine is judged itself).
func bodyWrites(src string, syn dialect.Syntax, name string, guard bool) bool {
	if guard && dialect.WritesGuardTable(src, syn, name) || !guard && dialect.WritesTable(src, syn, name) {
		return true
	}
	texts, ok := dynamicTexts(src)
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
// cannot read: such a body may write any table of its database, and a door's problem
// says why it was taken for one.
func dynamicUnread(src string) bool {
	_, ok := dynamicTexts(src)
	return !ok
}

// dynamicUnreadNote is the note a door's problem carries when the body's dynamic SQL
// cannot be read (dynamicUnread), "" otherwise.
func dynamicUnreadNote(src string) string {
	if !dynamicUnread(src) {
		return ""
	}
	return " (its dynamic SQL — PREPARE … FROM or EXECUTE IMMEDIATE of a variable or an expression, or EXECUTE of a statement it does not prepare from a literal — cannot be read, and may write any table)"
}

// dynamicTexts returns the texts the body src runs as dynamic SQL, and ok false when
// one of them cannot be read. Readable is only: PREPARE name FROM '<literal>' and
// EXECUTE IMMEDIATE '<literal>' [USING …], the literal one string token ('…' or "…")
// without a backslash (whose meaning depends on the routine's sql_mode, and which
// MariaDB's stored definition already decoded once), ending the statement; and
// EXECUTE name [USING …] of a name the body prepares (all its PREPAREs being such).
// Anything else is not — PREPARE s FROM @q, EXECUTE IMMEDIATE @q, CONCAT('…', '…'),
// ('…'), adjacent literals 'a' 'b', an introducer _utf8mb4'…', a hex literal, EXECUTE
// of a statement prepared by the caller (prepared statements are the session's), the
// word EXECUTE anywhere else but after GRANT or REVOKE or in their list (a local
// variable of that name) — nor a body the lexer cannot read that holds the word
// PREPARE or EXECUTE. DEALLOCATE PREPARE, DROP PREPARE and XA PREPARE run no text.
func dynamicTexts(src string) (texts []string, ok bool) {
	toks, err := dialect.LexDDL(src, dialect.MySQLSyntax)
	if err != nil {
		return nil, !dialect.Mentions(src, "prepare") && !dialect.Mentions(src, "execute")
	}
	// ends reports whether toks[i] ends a statement: the end of the body, ";", or
	// (after EXECUTE's text or name) USING.
	ends := func(i int, using bool) bool {
		return i >= len(toks) || toks[i].Kind == dialect.DDLPunct && toks[i].Text == ";" || using && toks[i].Is("USING")
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
	prepared := map[string]bool{}
	var executed []string
	for i, t := range toks {
		prev := dialect.DDLToken{}
		if i > 0 {
			prev = toks[i-1]
		}
		switch {
		case t.Is("PREPARE"):
			if prev.Is("DEALLOCATE") || prev.Is("DROP") || prev.Is("XA") {
				continue
			}
			n, okName := name(i + 1)
			text, okText := literal(i + 3)
			if !okName || i+2 >= len(toks) || !toks[i+2].Is("FROM") || !okText || !ends(i+4, false) {
				return nil, false
			}
			prepared[n] = true
			texts = append(texts, text)
		case t.Is("EXECUTE"):
			if prev.Is("GRANT") || prev.Is("REVOKE") || prev.Kind == dialect.DDLPunct && prev.Text == "," {
				continue
			}
			if i+1 < len(toks) && toks[i+1].Is("IMMEDIATE") {
				text, okText := literal(i + 2)
				if !okText || !ends(i+3, true) {
					return nil, false
				}
				texts = append(texts, text)
				continue
			}
			n, okName := name(i + 1)
			if !okName || !ends(i+2, true) {
				return nil, false
			}
			executed = append(executed, n)
		}
	}
	for _, n := range executed {
		if !prepared[n] {
			return nil, false
		}
	}
	return texts, true
}
