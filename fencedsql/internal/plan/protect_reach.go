// Statements that reach the guards' objects without naming them, refused by class on a
// pool with guarded tables whatever the options allow (docs/design.md, G15): writes to
// the system catalogs, PostgreSQL objects the guards depend on or that the wrapper's
// own SQL resolves (extensions, languages, types, operators, casts, a pool-wide
// search_path), privileges handed out by wildcard, server plugins, and a statement
// whose head is no SQL keyword (a pgx prepared-statement name).

package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// protectReach applies the refusals of this file to the statement sig[from:to] whose
// head keyword (upper case, "" for none) is at sig[first].
func (p *parser) protectReach(head string, from, first, to int) error {
	if !p.inBody && !p.expanded && p.rw.syn.DollarQuotes {
		if err := p.protectHead(head, first); err != nil {
			return err
		}
	}
	if err := p.protectCatalogWrites(head, first, to); err != nil {
		return err
	}
	if err := p.protectViewDDL(head, first, to); err != nil {
		return err
	}
	if err := p.protectDependencies(head, first, to); err != nil {
		return err
	}
	if err := p.protectGrants(head, first, to); err != nil {
		return err
	}
	if err := p.protectSurgery(first, to); err != nil {
		return err
	}
	return p.protectReachBodies(head, from, to)
}

// codeHeads are the statements whose string literals are code the server runs: a DO
// block, a routine body, PREPARE … FROM '…', EXECUTE [IMMEDIATE] '…', CALL run('…').
var codeHeads = map[string]bool{"DO": true, "CREATE": true, "ALTER": true, "PREPARE": true, "EXECUTE": true, "EXEC": true, "CALL": true}

// protectReachBodies applies the checks of this file (but the head check) to the
// statements of every string literal or dollar-quoted body of a statement whose
// strings are code (codeHeads), nested up to four deep: WithDDL or WithDynamicSQL let
// such a body run, but not one that writes a catalog or creates an extension (a
// DO $$ BEGIN UPDATE pg_proc … $$). A body that cannot be tokenized is left to the
// rules that refuse dynamic SQL and routine DDL (it was allowed by an option).
func (p *parser) protectReachBodies(head string, from, to int) error {
	if !codeHeads[head] || p.depth >= 4 {
		return nil
	}
	for i := from; i < to && i < len(p.sig); i++ {
		if !p.stringLike(i) {
			continue
		}
		body := stringBody(p.literalText(i))
		toks, err := sqllex.Lex(body, p.rw.syn)
		if err != nil {
			continue
		}
		q := &parser{rw: p.rw, src: body, all: toks, sig: significant(body, toks), depth: p.depth + 1, inBody: true}
		// The body's own literals, read as the server reads them (adjacent ones
		// joined): a reserved name spelled across 'UPDATE fenced'⏎'sql_floor …' in
		// an EXECUTE of the body (red-team rt21b F2).
		if len(p.rw.names) > 0 {
			if err := q.protectUnicodeEscapes(); err != nil {
				return err
			}
			texts := q.stringTexts(0, len(q.sig))
			for _, t := range q.sig {
				if t.Kind == sqllex.KindQuotedIdent && len(q.text(t)) > 2 && q.text(t)[1] == '&' {
					texts = append(texts, q.text(t)) // U&"…": decodeLoose reads its escapes
				}
			}
			for _, txt := range texts {
				if w := stringMentions(txt, guardPrefix); w != "" {
					return unsupported("", "a body whose string or name spells the guard object prefix %q on a pool with guarded tables", w)
				}
			}
		}
		start := 0
		for k := 0; k <= len(q.sig); k++ {
			if k < len(q.sig) && !q.punct(k, ";") {
				continue
			}
			if start < k {
				first := start
				// a block's BEGIN, or a branch's THEN/ELSE, before the statement
				// (a DO that opens a block of its own, DO [LANGUAGE l] '…', is a
				// statement, judged with its body: red-team rt22a F3)
				for first < k-1 && (q.punct(first, "(") || q.kwIn(first, "BEGIN", "THEN", "ELSE", "LOOP") ||
					q.kw(first, "DO") && !q.stringLike(first+1) && !q.kw(first+1, "LANGUAGE")) {
					first++
				}
				h := ""
				if q.sig[first].Kind == sqllex.KindWord {
					h = strings.ToUpper(q.text(q.sig[first]))
				}
				if err := q.protectReach(h, start, first, k); err != nil {
					return err
				}
				// A DO block inside a branch or loop of the statement (IF … THEN DO
				// $b$ … $b$): its body is judged too (red-team rt22a F3).
				for j := first + 1; j < k; j++ {
					if q.kw(j, "DO") && (q.stringLike(j+1) || q.kw(j+1, "LANGUAGE")) {
						if err := q.protectReach("DO", j, j, k); err != nil {
							return err
						}
					}
				}
			}
			start = k + 1
		}
	}
	return nil
}

// knownHeads are the words that start a statement in one of the dialects (PostgreSQL,
// MySQL/MariaDB with its top-level compound statements, SQLite); the planner's own
// lists are added at init.
var knownHeads = map[string]bool{
	"ANALYSE": true, "GET": true, "SIGNAL": true, "RESIGNAL": true, "INSTALL": true,
	"UNINSTALL": true, "PURGE": true, "CHANGE": true, "STOP": true, "SHUTDOWN": true,
	"CACHE": true, "BACKUP": true, "CLONE": true, "RESTART": true, "IMPORT": true,
	"CASE": true, "REPEAT": true, "LEAVE": true, "ITERATE": true, "OPEN": true,
	"REPLACE": true, "UPSERT": true, "LOAD": true, "BINLOG": true, "TRUNCATE": true,
	"COPY": true, "MERGE": true, "INSERT": true, "UPDATE": true, "DELETE": true,
	"EXPLAIN": true, "ANALYZE": true, "REASSIGN": true, "WITH": true,
}

// IsStatementHead reports whether word (any case) starts a statement in one of the
// dialects: a text on PostgreSQL whose statements start otherwise is refused on a pool
// with guarded tables (protectHead). For the fuzz oracle.
func IsStatementHead(word string) bool { return knownHeads[strings.ToUpper(word)] }

func init() {
	for _, m := range []map[string]bool{readHeads, ddlHeads, controlHeads, protectHeads, reachHeads, statementHeads, guardReadHeads} {
		for h := range m {
			knownHeads[h] = true
		}
	}
}

// protectHead refuses a statement that does not start with a statement keyword: pgx
// (Conn.Exec/Query, Batch.Queue, and stdlib under database/sql) runs the statement
// prepared under a name when the text equals that name, so "set_balance" would run an
// UPDATE the planner never saw. pgx speaks PostgreSQL only: on MySQL/MariaDB and SQLite
// a text that is no statement is the server's to reject (and the readings of a MySQL
// executable comment, /*!100000 …*/ read as version 10000 and "0 …", are not
// statements to judge by their head). A text that starts with an opening parenthesis is judged by what follows; the text with executable comments
// written out (protect) is not judged again: a MySQL optimizer hint (/*+ BKA(t) */)
// is no statement of its own.
func (p *parser) protectHead(head string, first int) error {
	if first >= len(p.sig) || p.sig[first].Kind == sqllex.KindExecComment || knownHeads[head] {
		return nil
	}
	what := p.text(p.sig[first])
	return unsupported("", "a statement that starts with %q, which is no SQL statement keyword, on a pool with guarded tables: pgx runs the statement prepared under a name (pgx.Conn.Prepare, e.g. in AfterConnect) when the query text equals that name, so the text could run SQL the wrapper never saw; send the statement's SQL text, not a prepared statement's name", what)
}

// mysqlSystemDBs are the MySQL/MariaDB databases that hold the server's catalogs
// (mysql.proc holds the guards' functions and triggers' definitions).
var mysqlSystemDBs = []string{"mysql", "information_schema", "performance_schema", "sys"}

func isOneOfFold(s string, set ...string) bool {
	for _, x := range set {
		if strings.EqualFold(s, x) {
			return true
		}
	}
	return false
}

// catalogTable reports whether a table reference (parts as written) names a system
// catalog: PostgreSQL's pg_catalog.*, pg_toast.*, information_schema.* and any
// unqualified pg_* name (pg_catalog is implicitly first on the search path, so
// pg_proc is pg_catalog.pg_proc); a table of MySQL/MariaDB's system databases;
// SQLite's schema and page tables (sqliteCatalogs).
func (p *parser) catalogTable(parts []string) bool {
	n := len(parts)
	switch {
	case n == 0:
		return false
	case p.rw.syn.DollarQuotes:
		if n == 1 {
			return hasPrefixFold(parts[0], "pg_")
		}
		return isOneOfFold(parts[n-2], "pg_catalog", "pg_toast", "information_schema")
	case p.rw.syn.ExecComments:
		return n >= 2 && isOneOfFold(parts[n-2], mysqlSystemDBs...)
	case p.rw.syn == sqllex.SQLite:
		return isOneOfFold(parts[n-1], sqliteCatalogs...)
	}
	return false
}

// sqliteCatalogs are SQLite's tables that hold the schema (the guards' triggers; with
// writable_schema on, a DSN's _pragma can turn it on where the wrapper does not see
// it) or the database's pages (sqlite_dbpage, compiled into modernc's SQLite: a write
// to it rewrites rows, triggers and the floor below every trigger and constraint), in
// any schema (main, temp, an attached one).
var sqliteCatalogs = []string{"sqlite_schema", "sqlite_master", "sqlite_temp_schema", "sqlite_temp_master", "sqlite_dbpage"}

// catalogIn returns the first catalog table named in sig[from:to], as written.
func (p *parser) catalogIn(from, to int) string {
	for k := from; k < to && k < len(p.sig); k++ {
		if k > 0 && p.punct(k-1, ".") {
			continue // a later part of a name read from its first
		}
		if parts := p.namePartsAt(k); p.catalogTable(parts) {
			return strings.Join(parts, ".")
		}
	}
	return ""
}

// writeTargetRefusal refuses a write (what) whose targets, sig[from:to], name a
// system catalog (catalogTable) or a relation through which a write reaches one
// (catalogView, protect_catalogview.go); nil when they name neither.
func (p *parser) writeTargetRefusal(what string, from, to int) error {
	if name := p.catalogIn(from, to); name != "" {
		return catalogRefusal(what, name)
	}
	for k := from; k < to && k < len(p.sig); k++ {
		if k > 0 && p.punct(k-1, ".") {
			continue
		}
		parts := p.namePartsAt(k)
		if v, ok := p.rw.catalogView(parts); ok {
			return catalogViewRefusal(what, strings.Join(parts, "."), v)
		}
	}
	return nil
}

// stopAt returns the first index in [from, to) at the depth of sig[from] holding one of
// the keywords or closing that depth, or to.
func (p *parser) stopAt(from, to int, words ...string) int {
	depth := 0
	for k := from; k < to && k < len(p.sig); k++ {
		switch {
		case p.punct(k, "("):
			depth++
		case p.punct(k, ")"):
			if depth == 0 {
				return k
			}
			depth--
		case depth == 0 && (p.kwIn(k, words...) || p.punct(k, ";")):
			return k
		}
	}
	return to
}

// protectCatalogWrites refuses a write to a system catalog (catalogTable) or to a
// relation through which a write reaches one (a known catalog view,
// protect_catalogview.go), at the head or inside a WITH, and MySQL's USE of a system
// database (its tables would then be written unqualified). Reads of the catalogs pass.
func (p *parser) protectCatalogWrites(head string, first, to int) error {
	if p.rw.syn.ExecComments && head == "USE" {
		if parts := p.namePartsAt(first + 1); len(parts) == 1 && isOneOfFold(parts[0], mysqlSystemDBs...) {
			return unsupported("", "USE %s on a pool with guarded tables: the statements after it would write the server's catalogs unqualified; run it on a plain connection", parts[0])
		}
	}
	if p.rw.syn.ExecComments && (head == "ALTER" || head == "DROP" || head == "RENAME") {
		if c := p.catalogIn(first, to); c != "" {
			return catalogRefusal(head, c)
		}
	}
	if head == "GRANT" || head == "REVOKE" {
		return nil // privileges: protectGrants
	}
	for i := first; i < to; i++ {
		from, end := -1, -1 // the write's targets: sig[from:end]
		switch {
		case p.kw(i, "COPY") && i == first:
			if p.kw(p.stopAt(i+1, to, "FROM", "TO"), "FROM") {
				from, end = i+1, p.stopAt(i+1, to, "FROM", "(")
			}
		case p.kw(i, "LOAD") && i == first:
			if k := p.stopAt(i+1, to, "INTO"); p.kw(k, "INTO") {
				j := k + 1
				if p.kw(j, "TABLE") {
					j++
				}
				from, end = j, j+1
			}
		case !p.writeKeyword(i) || i > first && p.kwIn(i-1, "OR", "BEFORE", "AFTER", "OF", "THEN", "INSTEAD"):
			continue
		case p.kw(i, "UPDATE"):
			// MySQL's multi-table UPDATE names every target before SET.
			from, end = i+1, p.stopAt(i+1, to, "SET")
		case p.kw(i, "DELETE"):
			j := i + 1
			for p.kwIn(j, "LOW_PRIORITY", "QUICK", "IGNORE") {
				j++
			}
			if p.kw(j, "FROM") {
				// DELETE FROM t1[, t2] [USING …]: the targets end at USING or a clause.
				from, end = j+1, p.stopAt(j+1, to, "USING", "WHERE", "RETURNING", "ORDER", "LIMIT", "AS")
			} else {
				// MySQL's DELETE t1[, t2] FROM …: the targets before FROM are aliases or
				// names of the tables after it: every table up to the conditions counts.
				from, end = j, p.stopAt(j, to, "WHERE", "ORDER", "LIMIT")
			}
		case p.kw(i, "TRUNCATE"):
			from, end = i+1, p.stopAt(i+1, to, "RESTART", "CONTINUE", "CASCADE", "RESTRICT")
		default: // INSERT, REPLACE, UPSERT, MERGE: one target after the modifiers
			j := p.afterWriteModifiers(i + 1)
			from, end = j, j+1
		}
		if from < 0 {
			continue
		}
		if err := p.writeTargetRefusal(strings.ToUpper(p.text(p.sig[i])), from, end); err != nil {
			return err
		}
	}
	return nil
}

func catalogRefusal(what, name string) error {
	return unsupported("", "%s of the system catalog %s on a pool with guarded tables: the catalogs hold the guards' functions and triggers and the NOT NULL of the fencing columns (PostgreSQL pg_catalog and any unqualified pg_* relation, information_schema; MySQL/MariaDB the mysql, information_schema, performance_schema and sys databases; SQLite sqlite_schema, sqlite_master and their temp forms, sqlite_dbpage), so a write to them changes or disables the guards without naming them; run it on a plain connection", what, name)
}

// dropCascadeKinds are the objects whose DROP … CASCADE drops only objects built on
// them (views, constraints, indexes, defaults), never rows or columns a guard relies on.
// (TRIGGER, RULE, POLICY, PUBLICATION and STATISTICS have no dependents; SCHEMA,
// EXTENSION and OWNED are protectDDL's.)
var dropCascadeKinds = []string{"TABLE", "VIEW", "MATERIALIZED", "INDEX", "SEQUENCE", "FOREIGN", "TEMPORARY",
	"TRIGGER", "RULE", "POLICY", "PUBLICATION", "STATISTICS", "SCHEMA", "EXTENSION", "OWNED"}

// protectDependencies refuses the PostgreSQL DDL that changes what the guards (or the
// wrapper's own fencing SQL) depend on without naming them:
//
//   - CREATE/ALTER/DROP EXTENSION in every form: an extension can install functions
//     that change tables without firing triggers (pg_surgery's heap_force_kill), and
//     ALTER EXTENSION … DROP/ADD detaches or adopts members, the guards' language
//     among them;
//   - CREATE [OR REPLACE]/ALTER/DROP [TRUSTED] [PROCEDURAL] LANGUAGE: the guard
//     functions are written in plpgsql, and DROP LANGUAGE … CASCADE drops them with
//     their triggers;
//   - DROP <type, domain, function, operator, collation, …> … CASCADE: it drops what
//     depends on the object, a guarded table's column of that type included (DROP
//     SCHEMA/EXTENSION … CASCADE and DROP OWNED are refused by protectDDL; DROP
//     TABLE/VIEW/INDEX/SEQUENCE … CASCADE drop no rows of another table);
//   - ALTER TYPE … RENAME VALUE / DROP / ALTER ATTRIBUTE / CASCADE and ALTER DOMAIN …
//     DROP: they change or drop the values of every row of a table using the type;
//   - CREATE/ALTER OPERATOR [CLASS|FAMILY] and CREATE CAST: the wrapper's fencing
//     comparisons (fence_token <= $t, version = $v) use bare operators, which the
//     server resolves through the search_path: a user operator is found instead of
//     pg_catalog's;
//   - ALTER DATABASE/ROLE/USER/SYSTEM … SET search_path: a default for every session
//     the pool (or any other) opens later;
//   - MySQL/MariaDB INSTALL/UNINSTALL PLUGIN/SONAME and PostgreSQL LOAD 'library':
//     server code loaded by the session.
func (p *parser) protectDependencies(head string, first, to int) error {
	has := func(w string) bool {
		for i := first; i < to; i++ {
			if p.kw(i, w) {
				return true
			}
		}
		return false
	}
	plain := "; run it on a plain connection (the driver without \"fenced-\")"
	switch head {
	case "INSTALL", "UNINSTALL":
		return unsupported("", "%s on a pool with guarded tables: a server plugin runs code the wrapper never sees and can write tables without the guards%s", head, plain)
	case "LOAD":
		if p.rw.syn.DollarQuotes && first+1 < to && p.sig[first+1].Kind == sqllex.KindString {
			return unsupported("", "LOAD of a shared library on a pool with guarded tables: it runs server code the wrapper never sees%s", plain)
		}
		return nil
	case "CREATE", "ALTER", "DROP":
	default:
		return nil
	}
	i := first + 1
	if head == "CREATE" && p.kw(i, "OR") && p.kw(i+1, "REPLACE") {
		i += 2
	}
	for p.kwIn(i, "TRUSTED", "PROCEDURAL") {
		i++
	}
	switch {
	case p.kw(i, "EXTENSION"):
		return unsupported("", "%s EXTENSION on a pool with guarded tables: an extension installs functions that can change tables without firing the guards' triggers (pg_surgery's heap_force_kill), and ALTER EXTENSION … DROP/ADD moves members, the guards' language among them, out of or into it without naming them%s", head, plain)
	case p.kw(i, "LANGUAGE"):
		return unsupported("", "%s LANGUAGE on a pool with guarded tables: the guard functions are written in a procedural language, and DROP LANGUAGE … CASCADE drops them with their triggers without naming them%s", head, plain)
	case head != "DROP" && p.kw(i, "OPERATOR") || head == "CREATE" && p.kw(i, "CAST"):
		return unsupported("", "%s %s on a pool with guarded tables: the wrapper's fencing comparisons (fence_token <= token, version = expected) use the operators the server resolves through the search_path, and a user operator or cast can be found instead of pg_catalog's%s", head, strings.ToUpper(p.text(p.sig[i])), plain)
	case head == "DROP" && has("CASCADE") && !p.kwIn(i, dropCascadeKinds...):
		return unsupported("", "DROP %s … CASCADE on a pool with guarded tables: it drops whatever depends on the object without naming it, a guarded table's column of that type or default included; drop the dependents first, or run it on a plain connection", strings.ToUpper(p.text(p.sig[i])))
	case head == "ALTER" && p.kw(i, "TYPE") && (has("DROP") || has("CASCADE") || p.hasPair(first, to, "RENAME", "VALUE") || p.hasPair(first, to, "ALTER", "ATTRIBUTE")):
		return unsupported("", "ALTER TYPE … RENAME VALUE/DROP/ALTER ATTRIBUTE on a pool with guarded tables: it changes or drops the values of every row of the tables that use the type, guarded tables included, with no token and no trigger%s", plain)
	case head == "ALTER" && p.kw(i, "DOMAIN") && has("DROP"):
		return unsupported("", "ALTER DOMAIN … DROP on a pool with guarded tables: a fencing column's NOT NULL or check may be the domain's%s", plain)
	case head == "ALTER" && p.kwIn(i, "DATABASE", "ROLE", "USER", "SYSTEM", "GROUP") && p.setsSearchPath(first, to):
		return unsupported("", "ALTER %s … SET search_path on a pool with guarded tables: it sets the search_path of every session opened later, where a user operator can be resolved in place of pg_catalog's in the wrapper's fencing comparisons, and other tables in place of the guards'%s", strings.ToUpper(p.text(p.sig[i])), plain)
	}
	return nil
}

// hasPair reports the keywords a, b one after the other in sig[from:to].
func (p *parser) hasPair(from, to int, a, b string) bool {
	for i := from; i+1 < to; i++ {
		if p.kw(i, a) && p.kw(i+1, b) {
			return true
		}
	}
	return false
}

// setsSearchPath reports SET search_path (any case, quoted) in sig[from:to].
func (p *parser) setsSearchPath(from, to int) bool {
	for i := from; i+1 < to; i++ {
		if p.kw(i, "SET") && p.isIdent(i+1) {
			if n, ok := p.ident(i + 1); !ok || strings.EqualFold(n, "search_path") {
				return true
			}
		}
	}
	return false
}

// protectGrants refuses GRANT/REVOKE that reach the guard objects without naming them:
// PostgreSQL's ON ALL TABLES/SEQUENCES/FUNCTIONS/PROCEDURES/ROUTINES IN SCHEMA and
// ALTER DEFAULT PRIVILEGES, MySQL/MariaDB's wildcards (ON *, *.*, db.*). A grant that
// names a guard object is refused by protectGuardObjects, one that names a guarded
// table by control unless WithDDL.
func (p *parser) protectGrants(head string, first, to int) error {
	if head == "ALTER" && p.kw(first+1, "DEFAULT") && p.kw(first+2, "PRIVILEGES") {
		return unsupported("", "ALTER DEFAULT PRIVILEGES on a pool with guarded tables: it grants privileges on objects created later, the guards' among them, without naming them; run it on a plain connection")
	}
	if head != "GRANT" && head != "REVOKE" {
		return nil
	}
	for i := first + 1; i < to; i++ {
		if !p.kw(i, "ON") {
			continue
		}
		if p.kw(i+1, "ALL") && p.kwIn(i+2, "TABLES", "SEQUENCES", "FUNCTIONS", "PROCEDURES", "ROUTINES") {
			return unsupported("", "%s … ON ALL %s IN SCHEMA on a pool with guarded tables: it reaches the guards' tables and functions in the schema without naming them (another role could then delete the tombstones); name the objects, or run it on a plain connection", head, strings.ToUpper(p.text(p.sig[i+2])))
		}
		for k := i + 1; k < to && !p.kwIn(k, "TO", "FROM"); k++ {
			if p.sig[k].Kind != sqllex.KindString && p.text(p.sig[k]) == "*" {
				return unsupported("", "%s … ON a wildcard (*, *.*, db.*) on a pool with guarded tables: it reaches the guards' tables and functions without naming them (another account could then delete the tombstones); name the objects, or run it on a plain connection", head)
			}
		}
		break
	}
	return nil
}
