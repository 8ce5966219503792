package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Object-wide DDL (red-team rt48a F1): statements that drop, replace or hand over
// objects without naming them, the guard's functions, triggers and tables among them —
// DROP OWNED BY r and REASSIGN OWNED BY r TO x (every object of the guards' owner), DROP
// … CASCADE (a schema, the language plpgsql, an extension, a type a recorder's key
// argument has: PostgreSQL drops what depends on it, whoever owns it), ALTER … OWNER TO
// (the new owner of a schema or type may drop it, and what depends on it, with
// CASCADE), DROP or ALTER SCHEMA, CREATE, ALTER or DROP EXTENSION (an extension's
// script runs as its installer), DROP or ALTER [PROCEDURAL] LANGUAGE, GRANT … ON or IN
// SCHEMA (ON ALL TABLES IN SCHEMA grants the tombstone table and the floor), ALTER or
// CREATE ROLE, USER, GROUP or DATABASE (a role- or database-wide setting), ALTER TYPE
// … RENAME VALUE (a key's enum value), and GRANT of a role (GRANT owner TO app:
// membership in the guards' owner) — the body's counterpart of what the wrapper
// refuses through the pool without a name (fencedsql/internal/plan/protect.go). A trigger, event trigger or SECURITY DEFINER routine whose body
// holds one lends its owner's rights to a statement through the pool, so the
// guard-writer judgement (guardWrites) counts it, failing closed: it cannot know which
// objects the statement reaches.

// objectVerbs and objectWords are the words objectWideStatement's rules pair (upper
// case); objectFilterSQL builds the catalog pre-filter from the same lists.
var (
	objectVerbs = []string{"DROP", "ALTER", "CREATE", "GRANT", "REASSIGN"}
	objectWords = []string{"OWNED", "CASCADE", "OWNER", "EXTENSION", "SCHEMA", "LANGUAGE", "PROCEDURAL", "ROLE", "USER", "GROUP", "DATABASE", "VALUE", "GRANT"}
)

// objectWideDDL reports whether the routine, trigger or rule text src may hold
// object-wide DDL under any standard_conforming_strings reading (bodyReadings): a
// statement (the text between two semicolons) whose words — its bare words and the
// words inside its string literals, in order, so that dynamic SQL (EXECUTE 'DROP
// OWNED BY ' || r, DECLARE q text := 'DROP SCHEMA s CASCADE') counts — match one of
// objectWideStatement's rules. A text the lexer cannot read counts when it holds a
// word of objectVerbs and one of objectWords anywhere. A word test that errs on the
// side of yes (DROP TABLE t CASCADE counts, whatever t is); escapes it does not
// decode (E'\x44ROP OWNED') are escapeDynamicSQL's, which routines and bodyWrites apply.
func objectWideDDL(src string) bool {
	for _, syn := range bodyReadings(src) {
		toks, err := dialect.LexDDL(src, syn)
		if err != nil {
			return mentionsAny(src, objectVerbs) && mentionsAny(src, objectWords)
		}
		var words []string
		for _, t := range toks {
			switch t.Kind {
			case dialect.DDLPunct:
				if t.Text == ";" {
					if objectWideStatement(words) {
						return true
					}
					words = words[:0]
				}
			case dialect.DDLWord:
				words = append(words, strings.ToUpper(t.Text))
			case dialect.DDLString:
				words = append(words, stringWords(t.Text)...)
			}
		}
		if objectWideStatement(words) {
			return true
		}
	}
	return false
}

// objectWideStatement judges the upper-case words of one statement (objectWideDDL).
func objectWideStatement(words []string) bool {
	has := map[string]bool{}
	grant, on := false, false // after a GRANT: whether an ON came before its TO
	for i, w := range words {
		prev := ""
		if i > 0 {
			prev = words[i-1]
		}
		switch w {
		case "OWNED":
			if has["DROP"] || has["REASSIGN"] {
				return true
			}
		case "CASCADE":
			if has["DROP"] {
				return true
			}
		case "OWNER":
			if has["ALTER"] {
				return true
			}
		case "EXTENSION":
			if has["DROP"] || has["ALTER"] || has["CREATE"] {
				return true
			}
		case "SCHEMA":
			if prev == "DROP" || prev == "ALTER" || grant && (prev == "IN" || prev == "ON") {
				return true
			}
		case "LANGUAGE", "PROCEDURAL":
			if prev == "DROP" || prev == "ALTER" {
				return true
			}
		case "ROLE", "USER", "GROUP", "DATABASE":
			if prev == "ALTER" || prev == "CREATE" {
				return true
			}
		case "VALUE":
			if prev == "RENAME" && has["ALTER"] {
				return true
			}
		case "GRANT":
			grant, on = true, false
		case "ON":
			on = true
		case "TO":
			if grant && !on {
				return true
			}
		}
		has[w] = true
	}
	return false
}

// stringWords returns the words (runs of identifier characters, upper case) of a
// string literal's text as written.
func stringWords(s string) []string {
	return strings.FieldsFunc(strings.ToUpper(s), func(r rune) bool {
		return !(r == '_' || r >= 0x80 || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z')
	})
}

// mentionsAny reports whether src mentions one of words (dialect.Mentions).
func mentionsAny(src string, words []string) bool {
	for _, w := range words {
		if dialect.Mentions(src, w) {
			return true
		}
	}
	return false
}

// objectFilterPatterns are the catalog pre-filter's two regular expressions (bind
// parameters, matched against the lower-cased text with ~): a text objectWideDDL may
// count holds a word of objectVerbs and one of objectWords.
func objectFilterPatterns() (verbs, words string) {
	re := func(ws []string) string {
		return `\m(` + strings.ToLower(strings.Join(ws, "|")) + `)\M`
	}
	return re(objectVerbs), re(objectWords)
}
