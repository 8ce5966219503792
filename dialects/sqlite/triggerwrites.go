package sqlite

import (
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// triggerWrites reports whether the CREATE TRIGGER statement sql may write the table
// name: its body (triggerBody) holds a statement that writes and names it
// (dialect.WritesTable). The schema-wide door checks (otherTriggers, guardWriters) ask
// this of every trigger in the schema for every guarded table, so a trigger whose text
// cannot name the table is passed over without lexing it (mayName).
func triggerWrites(sql, name string) bool {
	return mayName(sql, name) && dialect.WritesTable(triggerBody(sql), dialect.SQLiteSyntax, name)
}

// mayName reports whether the SQL text src may name the table name at all. SQLite
// folds identifiers by ASCII case only, and its quotes ("…", […], `…`, '…') escape
// nothing but a doubled quote character, so a name of ASCII letters, digits, '_' and
// '$' appears verbatim, in some ASCII case, in any text that names it. For any other
// name, or a text with a byte outside ASCII (which dialect.WritesTable may fold to an
// ASCII letter), it answers true and leaves the answer to the lexer.
func mayName(src, name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return true
		}
	}
	for i := 0; i < len(src); i++ {
		if src[i] >= 0x80 {
			return true
		}
	}
	return containsFoldASCII(src, name)
}

// containsFoldASCII reports whether s contains sub, ASCII letters compared without
// case (both ASCII).
func containsFoldASCII(s, sub string) bool {
	lower := func(c byte) byte {
		if c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && lower(s[i+j]) == lower(sub[j]) {
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// triggerBody returns the text of a CREATE TRIGGER statement after its BEGIN (the
// whole text when it has none, or cannot be read): the header names the trigger's own
// table and events, and its WHEN clause can only read.
func triggerBody(sql string) string {
	toks, err := dialect.LexDDL(sql, dialect.SQLiteSyntax)
	if err != nil {
		return sql
	}
	for _, t := range toks {
		if t.Is("BEGIN") {
			return sql[t.End:]
		}
	}
	return sql
}
