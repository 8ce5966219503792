package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// A routine or trigger body that shadows a guarded name (red-team rt47c F1): a
// function whose body runs CREATE TEMP TABLE accounts (or CREATE TABLE pg_temp.accounts,
// CREATE TEMP VIEW accounts, CREATE TEMP TABLE x …; ALTER TABLE x RENAME TO accounts,
// SELECT … INTO TEMP accounts in an SQL body), called through the pool by a statement
// that does not name the table (SELECT f(), a trigger of another table), makes the
// name resolve to the new relation for the rest of its session — pg_temp comes first
// on the default search_path. plan.ShadowsNames sees such DDL only in the text sent,
// so the pool's verdict for the name (made for the base table) then covers the
// temporary relation until the next re-check, and a stale write stores the fencing
// NULL there. The door checks count such a body as a door instead: the routine
// (routines), a trigger of any relation, the table's own included, and an event
// trigger (otherTriggers) — no catalog query of its own: the bodies the door queries
// already select are the ones that hold the name.

// shadowDDLWords are the words that make a body statement naming the table one that
// may change what the name resolves to: plan.ShadowsNames' heads (CREATE, ALTER,
// RENAME, DROP, IMPORT). Anywhere in the statement, not only at its head: a PL/pgSQL
// statement may start with IF … THEN, and a word test errs on the side of yes
// (CREATE TEMP TABLE x AS SELECT … FROM accounts, which only reads it, counts too).
var shadowDDLWords = map[string]bool{"CREATE": true, "ALTER": true, "RENAME": true, "DROP": true, "IMPORT": true}

// bodyShadows reports whether the routine body src, in language lang (pg_language's
// name), may create, rename, move or drop a relation of one of names (the table's and
// its partitions' and children's, familyNames), and which: for an SQL or PL/pgSQL body,
// a statement (between two semicolons) that holds one of shadowDDLWords and names it
// (ddlNames: as an identifier in any quoting and schema, pg_temp included, in a
// string, or a quoted name the lexer cannot decode), or, in an SQL body, an INTO whose
// target is the name (intoName: an SQL body's SELECT … INTO [TEMP] accounts is CREATE
// TABLE AS). A body in another language is not read here: bodyWrites already counts
// it when it names the table at all. Not seen, as for writes: a name built at run time from
// pieces (format('%s', 'acc' || 'ounts')) with no escape literal (dynamicSQLWrites
// counts those), DDL that brings a relation in without naming it (CREATE EXTENSION,
// IMPORT FOREIGN SCHEMA without LIMIT TO, ALTER SCHEMA … RENAME onto "$user"), and a
// search_path moved by the body (Known open findings).
func bodyShadows(src, lang string, names []string) (string, bool) {
	if lang != "sql" && lang != "plpgsql" {
		return "", false
	}
	// Under each standard_conforming_strings reading (bodyreadings.go, red-team rt47a
	// F1): a statement may hide inside what one reading takes for a string.
	for _, syn := range bodyReadings(src) {
		if n, ok := bodyShadowsAs(src, syn, lang, names); ok {
			return n, true
		}
	}
	return "", false
}

// bodyShadows's judgement of src under one reading's lexical rules syn.
func bodyShadowsAs(src string, syn dialect.Syntax, lang string, names []string) (string, bool) {
	toks, err := dialect.LexDDL(src, syn)
	for _, n := range names {
		if err != nil {
			// A body the lexer cannot read counts when it names the table and holds one
			// of the words.
			if dialect.Mentions(src, n) && (dialect.Mentions(src, "into") || anyWord(src, shadowDDLWords)) {
				return n, true
			}
			continue
		}
		if ddlNames(toks, n) || lang == "sql" && intoName(toks, n) {
			return n, true
		}
	}
	return "", false
}

// ddlNames reports whether one of the statements of toks (the text between two
// semicolons) holds one of shadowDDLWords and names name: as an identifier in any
// quoting and case (pg_temp.accounts's last part), as a word inside a string literal
// (dynamic SQL), or as a quoted identifier the lexer cannot decode (U&"…"). Unlike
// dialect.WritesTableWords, a write (INSERT, UPDATE, …) does not count here: a trigger
// of the table itself that writes it is ownTriggers' business, not a shadow.
func ddlNames(toks []dialect.DDLToken, name string) bool {
	ddl, names := false, false
	for _, t := range toks {
		switch {
		case t.Kind == dialect.DDLPunct && t.Text == ";":
			ddl, names = false, false
			continue
		case t.Kind == dialect.DDLWord && shadowDDLWords[strings.ToUpper(t.Text)]:
			ddl = true
		case t.Kind == dialect.DDLString:
			names = names || dialect.Mentions(t.Text, name)
		case t.Kind == dialect.DDLWord || t.Kind == dialect.DDLQuoted:
			n, ok := t.Name()
			if ok && strings.EqualFold(n, name) || !ok && t.Kind == dialect.DDLQuoted {
				names = true
			}
		}
		if ddl && names {
			return true
		}
	}
	return false
}

// anyWord reports whether src mentions one of words (dialect.Mentions).
func anyWord(src string, words map[string]bool) bool {
	for w := range words {
		if dialect.Mentions(src, w) {
			return true
		}
	}
	return false
}

// intoName reports whether toks hold INTO followed, past TEMP, TEMPORARY, UNLOGGED and
// TABLE, by name or schema.name (in any quoting; a quoted name the lexer cannot decode
// counts): the target of an SQL body's SELECT … INTO, which creates the table. INSERT
// INTO and MERGE INTO are writes (bodyWrites' business), not counted here. Only an
// SQL body's: a PL/pgSQL INTO names a variable (SELECT … INTO TEMP accounts does not
// compile there: "temp" is not a known variable; CREATE TABLE AS is its form), and
// fencedsql's own functions read into variables (v, oldname) that a guarded table's
// name might match.
func intoName(toks []dialect.DDLToken, name string) bool {
	for i, t := range toks {
		if !t.Is("INTO") || i > 0 && (toks[i-1].Is("INSERT") || toks[i-1].Is("MERGE")) {
			continue
		}
		j := i + 1
		for j < len(toks) && (toks[j].Is("TEMP") || toks[j].Is("TEMPORARY") || toks[j].Is("UNLOGGED") || toks[j].Is("TABLE")) {
			j++
		}
		// schema . name: the name is the last of the dotted parts.
		for j+2 < len(toks) && toks[j+1].Kind == dialect.DDLPunct && toks[j+1].Text == "." {
			j += 2
		}
		if j >= len(toks) || toks[j].Kind != dialect.DDLWord && toks[j].Kind != dialect.DDLQuoted {
			continue
		}
		if n, ok := toks[j].Name(); ok && strings.EqualFold(n, name) || !ok {
			return true
		}
	}
	return false
}

// shadowProblem is the problem of a door whose body (what, e.g. "the function f()")
// may create or rename a relation onto name (bodyShadows' answer) of table t; reached
// says which statements through the pool run it. It ends with what to do: remove the
// DDL, or drop the routine or trigger (the door's Fix, if any).
func shadowProblem(what string, t dialect.SideDoorTable, name, reached string) string {
	return what + " may create, rename, move or drop a relation named " + shadowedName(t, name) +
		" (CREATE TEMP TABLE, CREATE TABLE pg_temp.…, a TEMP VIEW, ALTER … RENAME TO, SELECT … INTO): run through the pool (by " + reached +
		"), whose statement holds no such DDL, it makes the name resolve to another relation for the rest of that session (pg_temp comes first on the search_path), and the pool's verdict for " +
		t.Table.String() + " would cover that relation: a stale write would land there unfenced. While it exists, guarded writes to " + t.Table.String() +
		" are refused: remove that DDL from the body (create such relations under other names), or drop it"
}

// shadowedName names what a shadowing door creates, for its problem: the table's
// name, or a partition's or child's.
func shadowedName(t dialect.SideDoorTable, name string) string {
	if strings.EqualFold(name, t.Table.Name) {
		return "like " + t.Table.String()
	}
	return "like " + name + " (a partition or inheritance child of " + t.Table.String() + ")"
}
