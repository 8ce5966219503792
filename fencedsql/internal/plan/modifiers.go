package plan

import "strings"

// modifiers are the optional words between a write's head keyword and its table:
// MySQL's LOW_PRIORITY, QUICK, DELAYED, HIGH_PRIORITY and IGNORE, PostgreSQL's ONLY,
// SQLite's OR <conflict resolution>.
type modifiers struct {
	ignore  bool   // IGNORE: the statement turns errors into warnings
	delayed bool   // DELAYED (MySQL, MariaDB): not allowed in a prepared statement
	or      string // the conflict resolution after OR, upper-cased; "" for none
}

// readModifiers reads modifiers starting at sig[i]: any of the words in skip, IGNORE,
// and (when allowOr) OR followed by a word. It returns the index of the first token
// after them.
func (p *parser) readModifiers(i int, allowOr bool, skip ...string) (int, modifiers) {
	var m modifiers
	for {
		switch {
		case p.kwIn(i, skip...):
			m.delayed = m.delayed || p.kw(i, "DELAYED")
			i++
		case p.kw(i, "IGNORE"):
			m.ignore = true
			i++
		case allowOr && p.kw(i, "OR") && p.isIdent(i+1):
			m.or = strings.ToUpper(p.text(p.sig[i+1]))
			i += 2
		default:
			return i, m
		}
	}
}

// changesNotNull reports whether the modifiers change what a NOT NULL violation does
// (SQLite's OR REPLACE/IGNORE/FAIL turn the fencing error into something else; OR
// ABORT and OR ROLLBACK keep it an error).
func (m modifiers) changesNotNull() bool {
	return m.or != "" && m.or != "ABORT" && m.or != "ROLLBACK"
}
