package sqlite

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// LintSchema finds what in a guarded table's declaration defeats the fence
// (dialect.SchemaLinter): the lazy check before the first guarded write refuses such
// a table with fencedsql.ErrSchema, and schema.Check reports it. It reads the
// CREATE TABLE text from sqlite_master (the only place SQLite keeps conflict clauses:
// pragma_table_info and pragma_index_list do not show them), the declared types from
// pragma_table_info and STRICT from pragma_table_list.
//
// Conflict clauses (ON CONFLICT on a constraint; it applies to every statement that
// does not name its own OR clause, and the rewriter refuses OR REPLACE/IGNORE/FAIL):
//
//   - PRIMARY KEY or UNIQUE (column or table constraint) ON CONFLICT REPLACE: an INSERT
//     or a key-changing UPDATE that collides with a row deletes that row, whatever its
//     fence_token, without its delete triggers (no tombstone, no guard) unless
//     recursive_triggers is on, and writes the stale row in its place. Refused.
//   - PRIMARY KEY or UNIQUE ON CONFLICT IGNORE: the colliding row is skipped and the
//     statement succeeds: an INSERT that should fail (ErrDuplicate, or ErrFenced by
//     the tombstone guard) reports success, a multi-row statement applies to some
//     rows only. Refused (G2: a write that did not happen must not look done).
//   - NOT NULL of the token or the version column ON CONFLICT REPLACE: the fencing
//     NULL becomes the column's default (0), so a stale write succeeds and lowers the
//     token (or an ExpectVersion mismatch succeeds and resets the version); IGNORE:
//     the fenced row is skipped silently; FAIL: the rows the statement changed before
//     the fenced one stay changed. All refused: a fenced write must fail, all or
//     nothing.
//   - ABORT (the default) is what the fence relies on. ROLLBACK is accepted: the
//     statement fails and nothing of it stays (SQLite rolls back the whole
//     transaction: later statements of a database/sql Tx then run in autocommit and
//     its Commit fails, which does not let a stale write through). FAIL on a PRIMARY
//     KEY or UNIQUE is accepted: the statement fails (ErrDuplicate) and the rows it
//     already changed each passed their own fence check. A conflict clause on a NOT
//     NULL of another column, or on the no-op NULL constraint, has no bearing on the
//     fence. CREATE UNIQUE INDEX takes no conflict clause.
//
// A fencing column that a unique key depends on (keyFencing; dialect.KeyFencingColumn):
// a column of the PRIMARY KEY (an INTEGER PRIMARY KEY rowid alias included), of a
// UNIQUE constraint or index (pragma_table_info's pk and pragma_index_list), named by
// the expression or the WHERE of a unique index, or the same of a generated column
// computed from it: every fenced write sets it and moves the row. Refused; the table
// must be rebuilt with fencing columns of their own.
//
// Type affinity of the token and the version column (https://sqlite.org/datatype3.html):
// the fence compares fence_token <= ? and must compare numbers. INTEGER affinity (a
// declared type containing INT) and NUMERIC affinity (any type not matching another
// rule: NUMERIC, DECIMAL(20), BOOLEAN…; it stores integers and integral values as
// integers and differs from INTEGER only in CAST) are accepted. Refused: TEXT affinity
// (CHAR, CLOB, TEXT): the bound token is compared as text, so '10' <= '9' and token 9
// overwrites token 10; REAL affinity (REAL, FLOA, DOUB): tokens above 2^53 are
// rounded, so two tokens compare equal and the older one is accepted; BLOB affinity
// (BLOB, or no declared type) and a STRICT table's ANY: values keep the storage class
// they were written with, and SQLite orders every TEXT and BLOB above every number, so
// how the row was fenced depends on how the value was written (an import, a dump
// restore, a writer outside the wrapper), not on its number. A STRICT table's INT or
// INTEGER is the best choice: it refuses non-integer values outright.
//
// SQLite cannot alter a column or a constraint, so the problems carry no statement:
// they name the clause to remove or the type to use, and the table must be rebuilt
// (https://sqlite.org/lang_altertable.html#otheralter). PRAGMA writable_schema, which
// would edit the declaration in place, is refused by the wrapper and is not proposed.
func (d dialectImpl) LintSchema(ctx context.Context, query dialect.CatalogQuery, t dialect.LintTable) ([]dialect.SchemaProblem, error) {
	facts, err := d.declaration(ctx, query, t.Table)
	if err != nil {
		return nil, err
	}
	return judgeDeclaration(t, facts), nil
}

// declaration is what LintSchema reads from the catalog about one table.
type declaration struct {
	found  bool              // the table exists (its CREATE TABLE text was read)
	sql    string            // its CREATE TABLE text
	strict bool              // a STRICT table
	types  map[string]string // column name (foldName) → declared type
	keys   map[string]string // column name (foldName) → a unique key it is a key column of
	// generated: the generated columns (pragma_table_xinfo hidden 2 or 3), each name
	// folded (foldName) → as declared; exprKeys: the unique indexes on an expression or
	// partial (name → its CREATE INDEX text), read for keyFencing. Column names are
	// folded as SQLite folds them, ASCII letters only: "É" and "é" are two columns,
	// each with its own entry (red-team rt61b F3).
	generated map[string]string
	exprKeys  map[string]string
}

// declaration reads t's CREATE TABLE text, its declared column types and STRICT. An
// unqualified name is resolved as SQLite resolves it in a statement: temp, main, then
// the attached databases in order.
func (d dialectImpl) declaration(ctx context.Context, query dialect.CatalogQuery, t dialect.TableName) (declaration, error) {
	q := `SELECT l.schema, l.strict FROM pragma_table_list(?) l JOIN pragma_database_list db ON db.name = l.schema WHERE l.type = 'table' ORDER BY CASE db.name WHEN 'temp' THEN -1 ELSE db.seq END LIMIT 1`
	args := []any{t.Name}
	if t.Schema != "" {
		q = `SELECT schema, strict FROM pragma_table_list(?) WHERE type = 'table' AND schema = ? COLLATE NOCASE`
		args = []any{t.Name, t.Schema}
	}
	rows, err := query(ctx, q, args...)
	if err != nil {
		return declaration{}, err
	}
	if len(rows) == 0 || len(rows[0]) < 2 {
		return declaration{}, nil
	}
	schema := rows[0][0]
	dec := declaration{strict: rows[0][1] == "1", types: map[string]string{}, keys: map[string]string{}, generated: map[string]string{}, exprKeys: map[string]string{}}
	rows, err = query(ctx, `SELECT 'sql', sql, '' FROM `+d.QuoteIdent(schema)+`.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE
UNION ALL SELECT 'column', name, type FROM pragma_table_info(?, ?)
UNION ALL SELECT 'key', name, 'PRIMARY KEY' FROM pragma_table_info(?, ?) WHERE pk > 0
UNION ALL SELECT 'key', ii.name, il.name FROM pragma_index_list(?, ?) il JOIN pragma_index_info(il.name, ?) ii WHERE il."unique" = 1 AND ii.name IS NOT NULL
UNION ALL SELECT 'generated', name, '' FROM pragma_table_xinfo(?, ?) WHERE hidden IN (2, 3)
UNION ALL SELECT 'exprkey', il.name, m.sql FROM pragma_index_list(?, ?) il JOIN `+d.QuoteIdent(schema)+`.sqlite_master m ON m.type = 'index' AND m.name = il.name
  WHERE il."unique" = 1 AND (il.partial = 1 OR EXISTS (SELECT 1 FROM pragma_index_xinfo(il.name, ?) x WHERE x.cid = -2))`,
		t.Name, t.Name, schema, t.Name, schema, t.Name, schema, schema, t.Name, schema, t.Name, schema, schema)
	if err != nil {
		return declaration{}, err
	}
	for _, r := range rows {
		if len(r) < 3 {
			continue
		}
		switch r[0] {
		case "sql":
			dec.found, dec.sql = true, r[1]
		case "column":
			dec.types[foldName(r[1])] = r[2]
		case "key":
			if _, ok := dec.keys[foldName(r[1])]; !ok {
				dec.keys[foldName(r[1])] = r[2]
			}
		case "generated":
			dec.generated[foldName(r[1])] = r[1]
		case "exprkey":
			dec.exprKeys[r[1]] = r[2]
		}
	}
	return dec, nil
}

// judgeDeclaration judges what declaration read: the conflict clauses of the CREATE
// TABLE text, then the affinity of the token and the version column.
func judgeDeclaration(t dialect.LintTable, dec declaration) []dialect.SchemaProblem {
	name := t.Table.String()
	if !dec.found {
		return []dialect.SchemaProblem{{Problem: "the declaration of " + name + " (CREATE TABLE in sqlite_master) could not be read: its conflict clauses cannot be checked"}}
	}
	var out []dialect.SchemaProblem
	clauses, err := conflictClauses(dec.sql)
	if err != nil {
		return []dialect.SchemaProblem{{Problem: "the declaration of " + name + " could not be read (" + err.Error() + "): its conflict clauses cannot be checked"}}
	}
	for _, c := range clauses {
		if p := judgeClause(t, c); p != "" {
			out = append(out, dialect.SchemaProblem{Problem: p + "; SQLite cannot alter a constraint: rebuild " + name + " without that clause (https://sqlite.org/lang_altertable.html#otheralter)"})
		}
	}
	for _, col := range []string{t.TokenColumn, t.VersionColumn} {
		typ, ok := dec.types[foldName(col)]
		if !ok {
			continue // a missing column is the column check's problem
		}
		for _, key := range keyFencing(dec, col) {
			out = append(out, dialect.SchemaProblem{Problem: dialect.KeyFencingColumn(col, key)})
		}
		if p := judgeAffinity(col, typ, dec.strict); p != "" {
			out = append(out, dialect.SchemaProblem{Problem: p + "; SQLite cannot change a column's type: rebuild " + name + " with " + col + " BIGINT NOT NULL DEFAULT 0 (INTEGER in a STRICT table)"})
		}
	}
	return out
}

// conflictClause is one ON CONFLICT clause of a CREATE TABLE statement.
type conflictClause struct {
	// constraint: "PRIMARY KEY", "UNIQUE", "NOT NULL", "NULL" (SQLite's no-op NULL
	// constraint), or "" when the clause could not be attributed.
	constraint string
	column     string // the column, for a column constraint; "" for a table constraint
	name       string // the CONSTRAINT name, if any
	action     string // ROLLBACK, ABORT, FAIL, IGNORE or REPLACE, upper case
	text       string // the clause as written, from its constraint to its action
}

// judgeClause returns the problem of c in words, "" when c is harmless (see
// LintSchema).
func judgeClause(t dialect.LintTable, c conflictClause) string {
	where := "the " + c.constraint
	if c.name != "" {
		where += " constraint " + c.name
	}
	if c.column != "" {
		where += " of column " + c.column
	}
	where += " of " + t.Table.String() + " is declared ON CONFLICT " + c.action + " (" + c.text + ")"
	switch c.constraint {
	case "PRIMARY KEY", "UNIQUE":
		switch c.action {
		case "REPLACE":
			return where + ": an INSERT or a key-changing UPDATE that collides with a row deletes that row, whatever its " + t.TokenColumn +
				", without its delete triggers (no tombstone, no guard), and writes the stale row in its place"
		case "IGNORE":
			return where + ": an INSERT or UPDATE that collides with a row is skipped and the statement succeeds, so a write that did not happen looks done (a multi-row statement applies to some rows only)"
		}
	case "NOT NULL":
		var col string
		switch {
		case sameName(c.column, t.TokenColumn):
			col = "token"
		case sameName(c.column, t.VersionColumn):
			col = "version"
		default:
			return ""
		}
		switch c.action {
		case "REPLACE":
			return where + ": the fencing NULL becomes the column's default, so a stale " + col + " write succeeds (the fence relies on the NOT NULL violation)"
		case "IGNORE":
			return where + ": a fenced row is skipped and the statement succeeds, so a stale write looks done (the fence relies on the NOT NULL violation)"
		case "FAIL":
			return where + ": a fenced write keeps the rows the statement changed before the fenced one (a fenced statement must change nothing)"
		}
	case "NULL":
	default:
		if c.action != "ABORT" && c.action != "ROLLBACK" {
			return "an ON CONFLICT " + c.action + " clause of " + t.Table.String() + " (" + c.text + ") could not be attributed to a constraint"
		}
	}
	return ""
}

// judgeAffinity returns the problem of a fencing column of declared type typ, "" when
// its affinity is INTEGER or NUMERIC (see LintSchema).
func judgeAffinity(col, typ string, strict bool) string {
	what := "column " + col + " is declared " + quoteType(typ)
	if strict {
		switch upperWord(strings.TrimSpace(typ)) {
		case "INT", "INTEGER":
			return ""
		case "ANY":
			return what + " in a STRICT table: values keep the storage class they were written with, and SQLite orders TEXT and BLOB above every number, so the fence would compare how a token was written, not its number"
		}
	}
	switch affinity(typ) {
	case "TEXT":
		return what + " (TEXT affinity): the fence compares tokens as text ('10' <= '9'), so an older token overwrites a newer one"
	case "REAL":
		return what + " (REAL affinity): tokens above 2^53 are rounded, so an older token can compare equal to a newer one and is accepted"
	case "BLOB":
		return what + " (BLOB affinity): values keep the storage class they were written with, and SQLite orders TEXT and BLOB above every number, so the fence would compare how a token was written, not its number"
	}
	return ""
}

func quoteType(typ string) string {
	if strings.TrimSpace(typ) == "" {
		return "without a type"
	}
	return typ
}

// affinity is SQLite's sqlite3AffinityType: the affinity of a column of declared type
// typ, "INTEGER", "TEXT", "BLOB", "REAL" or "NUMERIC". The first rule that matches
// wins: INT; CHAR, CLOB or TEXT; BLOB or no type; REAL, FLOA or DOUB; else NUMERIC
// (SQLite scans the name once and stops at INT: "CHARINT" is INTEGER).
func affinity(typ string) string {
	if typ == "" {
		return "BLOB"
	}
	aff := "NUMERIC"
	var h uint32
	for i := 0; i < len(typ); i++ {
		c := typ[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h = h<<8 | uint32(c)
		switch {
		case h == 'c'<<24|'h'<<16|'a'<<8|'r', h == 'c'<<24|'l'<<16|'o'<<8|'b', h == 't'<<24|'e'<<16|'x'<<8|'t':
			aff = "TEXT"
		case h == 'b'<<24|'l'<<16|'o'<<8|'b' && (aff == "NUMERIC" || aff == "REAL"):
			aff = "BLOB"
		case (h == 'r'<<24|'e'<<16|'a'<<8|'l' || h == 'f'<<24|'l'<<16|'o'<<8|'a' || h == 'd'<<24|'o'<<16|'u'<<8|'b') && aff == "NUMERIC":
			aff = "REAL"
		case h&0x00FFFFFF == 'i'<<16|'n'<<8|'t':
			return "INTEGER"
		}
	}
	return aff
}

// conflictClauses finds the ON CONFLICT clauses of a CREATE TABLE statement, with the
// constraint each belongs to: in the parenthesised body, split at top-level commas
// into column definitions and table constraints (which SQLite also accepts without
// commas between them), each "ON CONFLICT action" at the item's top level belongs to
// the constraint just before it — PRIMARY KEY [ASC|DESC], PRIMARY KEY (…), UNIQUE,
// UNIQUE (…), NOT NULL or NULL. An item that starts with CONSTRAINT, PRIMARY, UNIQUE,
// CHECK or FOREIGN (bare words, which SQLite reserves) is a table constraint; any
// other starts with its column's name (a word, a quoted identifier or a string).
// ON DELETE / ON UPDATE of a foreign key are not conflict clauses. A lexical error, or
// a text without a body, is an error.
func conflictClauses(sql string) ([]conflictClause, error) {
	body, err := tableBody(sql)
	if err != nil {
		return nil, err
	}
	var out []conflictClause
	for _, it := range body.items {
		out = append(out, itemClauses(sql, body.toks[it[0]:it[1]], body.match, it[0])...)
	}
	return out, nil
}

// createBody is the parenthesised body of a CREATE TABLE statement, lexed.
type createBody struct {
	toks  []dialect.DDLToken
	match map[int]int // the index of the parenthesis matching the one at an index
	items [][2]int    // each column definition or table constraint: toks[start:end]
}

// tableBody lexes a CREATE TABLE statement and splits its parenthesised body at
// top-level commas into column definitions and table constraints (see
// conflictClauses). A CREATE TABLE … AS SELECT has no body (no items); a lexical
// error or unbalanced parentheses are an error.
func tableBody(sql string) (createBody, error) {
	toks, err := dialect.LexDDL(sql, dialect.SQLiteSyntax)
	if err != nil {
		return createBody{}, err
	}
	punct := func(i int, s string) bool {
		return i >= 0 && i < len(toks) && toks[i].Kind == dialect.DDLPunct && toks[i].Text == s
	}
	open := -1
	for i := range toks {
		if punct(i, "(") {
			open = i
			break
		}
		if toks[i].Is("AS") {
			break // CREATE TABLE … AS SELECT: no constraints
		}
	}
	body := createBody{toks: toks, match: map[int]int{}}
	if open < 0 {
		return body, nil
	}
	var stack []int
	closeAt := -1
	for i := open; i < len(toks) && closeAt < 0; i++ {
		switch {
		case punct(i, "("):
			stack = append(stack, i)
		case punct(i, ")"):
			if len(stack) == 0 {
				return createBody{}, errUnbalanced
			}
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			body.match[i], body.match[o] = o, i
			if o == open {
				closeAt = i
			}
		}
	}
	if closeAt < 0 {
		return createBody{}, errUnbalanced
	}
	item := open + 1
	for i := open + 1; i <= closeAt; i++ {
		if punct(i, "(") {
			i = body.match[i]
			continue
		}
		if !punct(i, ",") && i != closeAt {
			continue
		}
		body.items = append(body.items, [2]int{item, i})
		item = i + 1
	}
	return body, nil
}

type lexError string

func (e lexError) Error() string { return string(e) }

const errUnbalanced = lexError("unbalanced parentheses")

// itemClauses returns the conflict clauses of one column definition or table
// constraint: toks, which start at index base of the statement's tokens (match is
// indexed like those).
func itemClauses(sql string, toks []dialect.DDLToken, match map[int]int, base int) []conflictClause {
	if len(toks) == 0 {
		return nil
	}
	column := ""
	first := toks[0]
	if !(first.Is("CONSTRAINT") || first.Is("PRIMARY") || first.Is("UNIQUE") || first.Is("CHECK") || first.Is("FOREIGN")) {
		column, _ = first.Name()
	}
	var out []conflictClause
	for i := 0; i < len(toks); i++ {
		if toks[i].Kind == dialect.DDLPunct && toks[i].Text == "(" {
			i = match[base+i] - base
			continue
		}
		if !(toks[i].Is("ON") && i+2 < len(toks) && toks[i+1].Is("CONFLICT")) {
			continue
		}
		c := conflictClause{column: column, action: upperWord(toks[i+2].Text)}
		// The constraint just before: skip a parenthesised column list and ASC/DESC.
		j := i - 1
		if j >= 0 && toks[j].Kind == dialect.DDLPunct && toks[j].Text == ")" {
			j = match[base+j] - base - 1
		}
		if j >= 0 && (toks[j].Is("ASC") || toks[j].Is("DESC")) {
			j--
		}
		start := j
		switch {
		case j >= 1 && toks[j].Is("KEY") && toks[j-1].Is("PRIMARY"):
			c.constraint, start = "PRIMARY KEY", j-1
		case j >= 0 && toks[j].Is("UNIQUE"):
			c.constraint = "UNIQUE"
		case j >= 1 && toks[j].Is("NULL") && toks[j-1].Is("NOT"):
			c.constraint, start = "NOT NULL", j-1
		case j >= 0 && toks[j].Is("NULL"):
			c.constraint = "NULL"
		}
		if start < 0 || c.constraint == "" {
			start = i
		}
		if start >= 2 && toks[start-2].Is("CONSTRAINT") {
			c.name, _ = toks[start-1].Name()
		}
		c.text = sql[toks[start].Start:toks[i+2].End]
		out = append(out, c)
		i += 2
	}
	return out
}

var _ dialect.SchemaLinter = dialectImpl{}
