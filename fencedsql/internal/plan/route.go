package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// What passes on a pool with guarded tables is an allowlist: a statement that names a
// guarded table passes only as a read the wrapper understands (readHeads, SELECT and
// read-only WITH) or as a write it fences (UPDATE, DELETE, INSERT); transaction control
// and dynamic SQL are refused whatever they name, DDL that names a guarded table unless
// WithDDL; anything else that names one is refused.

// readHeads are statements that do not change rows: they pass even when they name a
// guarded table.
var readHeads = map[string]bool{
	"SELECT": true, "VALUES": true, "TABLE": true, "SHOW": true, "DESCRIBE": true, "DESC": true,
	"PRAGMA": true, "USE": true, "LISTEN": true, "UNLISTEN": true, "NOTIFY": true, "FETCH": true,
	"CLOSE": true, "MOVE": true, "DISCARD": true, "RESET": true, "CHECKPOINT": true,
	"DEALLOCATE": true, "DECLARE": true, "FLUSH": true, "KILL": true, "CHECK": true,
	"CHECKSUM": true, "SAVEPOINT": true, "RELEASE": true, "UNLOCK": true, "HANDLER": true,
	"HELP": true,
	// maintenance that does not change rows
	"VACUUM": true, "REINDEX": true, "CLUSTER": true, "OPTIMIZE": true,
}

// ddlHeads change the schema (or maintain it).
var ddlHeads = map[string]bool{
	"CREATE": true, "ALTER": true, "DROP": true, "RENAME": true, "COMMENT": true, "GRANT": true,
	"REVOKE": true, "REPAIR": true, "ATTACH": true, "DETACH": true, "REFRESH": true, "SECURITY": true,
	"IMPORT": true,
}

// plan classifies the statement by its head keyword and hands it to the planner of
// its kind; statements that cannot write a guarded table pass unchanged.
func (p *parser) plan(versioned bool) (*Plan, error) {
	if len(p.sig) == 0 {
		return Passthrough, nil
	}
	// Guard objects, DDL that removes guards, protected settings: refused whatever the
	// statement names and the options allow.
	if err := p.protect(); err != nil {
		return nil, err
	}
	if !p.rw.mayMention(p.src) {
		// Looked at only for its head (controlHead): it names no guarded table, so only
		// the checks that do not depend on that apply.
		if err := p.controlEach(); err != nil {
			return nil, err
		}
		return p.pass(), nil
	}
	// Malformed: parentheses that do not balance in a statement naming a guarded table
	// (the database would refuse the text; the rewrite must not make it valid with
	// another meaning).
	if !p.balancedParens() && p.mentionsGuard() {
		return nil, unsupported(p.firstGuard(), "malformed SQL: unbalanced parentheses")
	}
	// MySQL executable comments (/*! … */) run their content: a write or a guarded
	// table inside one cannot be analysed, whatever surrounds it.
	if err := p.checkExecComments(); err != nil {
		return nil, err
	}
	// Optimizer hints are blanks, but SET_VAR sets a session variable (hint.go).
	if err := p.checkHints(); err != nil {
		return nil, err
	}
	// Multi-statement strings: anything significant after a top-level ';'.
	for i, t := range p.sig {
		if t.Kind == sqllex.KindPunct && p.text(t) == ";" && i+1 < len(p.sig) {
			if p.mentionsGuard() || p.hasUndecodableIdent() {
				return nil, unsupported(p.firstGuard(), "a multi-statement string that mentions a guarded table")
			}
			if len(p.rw.names) > 0 {
				if err := p.controlEach(); err != nil {
					return nil, err
				}
			}
			return p.pass(), nil
		}
	}
	// The head keyword, after any opening parentheses: "(WITH … UPDATE …)" is a
	// top-level statement too.
	first := 0
	for first < len(p.sig)-1 && p.punct(first, "(") {
		first++
	}
	head := strings.ToUpper(p.text(p.sig[first]))
	if p.sig[first].Kind != sqllex.KindWord {
		head = ""
	}
	if len(p.rw.names) > 0 {
		if err := p.control(head, first); err != nil {
			return nil, err
		}
	}
	if first > 0 && (head == "SELECT" || head == "WITH") {
		// A query in parentheses that wrap the whole statement is planned as the query:
		// "(SELECT … FOR UPDATE)" is claimed like the plain form.
		if lo, hi, ok := p.unwrapped(); ok && lo == first {
			in := p.inner(lo, hi)
			if head == "SELECT" {
				return in.lockingRead(-1)
			}
			if main, ok := in.afterWithList(0); ok && in.kw(main, "SELECT") && !in.hasWriteIn(0, main) {
				in.start = main
				return in.lockingRead(0)
			}
		}
	}
	pl, err := p.planHead(head, first, versioned)
	if err != nil || p.readPlanned {
		return pl, err
	}
	return p.unclaimedLock(head, pl)
}

// planHead plans the statement by its head keyword (at sig[first], after any opening
// parentheses).
func (p *parser) planHead(head string, first int, versioned bool) (*Plan, error) {
	if first > 0 && head != "SELECT" && head != "VALUES" && head != "TABLE" && head != "WITH" {
		return nil, unsupported(p.firstGuard(), "a parenthesised %s", strings.TrimSpace(head+" statement"))
	}
	// A quoted identifier the lexer cannot decode (PostgreSQL U&"…" escapes) could name
	// a guarded table: refuse it anywhere but in statements that cannot write.
	if p.hasUndecodableIdent() && !readHeads[head] && !ddlHeads[head] && head != "LOCK" {
		return nil, unsupported("", "a quoted identifier with escapes (U&\"…\") in a statement that may write")
	}
	switch head {
	case "UPDATE":
		return p.update(versioned)
	case "DELETE":
		return p.delete(versioned)
	case "INSERT":
		return p.insert(versioned)
	case "EXPLAIN", "ANALYZE", "DESCRIBE", "DESC":
		if first == 0 {
			return p.explain(head)
		}
	case "WITH":
		return p.with(first, versioned)
	case "SELECT":
		if first == 0 {
			return p.lockingRead(-1)
		}
	case "MERGE":
		if first == 0 {
			return p.merge()
		}
	case "COPY":
		if first == 0 {
			if pl, ok := p.copyOut(); ok {
				return pl, nil
			}
		}
	}
	if first > 0 {
		return p.pass(), nil // a parenthesised query
	}
	if readHeads[head] || ddlHeads[head] || controlHeads[head] {
		// control refused what is unsafe among these: the rest passes.
		return p.pass(), nil
	}
	// TRUNCATE, COPY, LOAD, MERGE, REPLACE, UPSERT and anything unknown.
	if g := p.firstGuard(); g != "" {
		return nil, unsupported(g, "%s on a guarded table", strings.ToUpper(strings.TrimSpace(head+" statement")))
	}
	return p.pass(), nil
}

// setStatementInner judges the statement a MariaDB SET STATEMENT … FOR runs, planned
// on its own as if sent alone: it passes only when that statement would pass unchanged
// (a read, a write to a table that is not guarded). Anything the wrapper would rewrite
// or refuse alone — a guarded write, transaction control, a savepoint, dynamic SQL
// (EXECUTE IMMEDIATE builds a write from pieces no scan reads: a red-team pass wrote a
// guarded table under a stale token this way) — is refused inside it too: the prefix
// cannot be carried over a rewritten statement. Without a top-level FOR the statement
// is malformed and refused.
func (p *parser) setStatementInner(first int) error {
	depth := 0
	for i := first + 2; i < len(p.sig); i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
		case depth == 0 && p.kw(i, "FOR"):
			if i+1 >= len(p.sig) {
				return unsupported("", "SET STATEMENT … FOR without a statement")
			}
			inner := p.src[p.sig[i+1].Start:] // shorter at every level: nesting ends
			pl, err := p.rw.Rewrite(inner, false)
			if err != nil {
				return err
			}
			if pl.Kind != KindPass || pl.TxOnly != nil || pl.ResetsSession || pl.ResetsNames || pl.ResetsPoolNames {
				g := ""
				if pl.Guard != nil {
					g = pl.Guard.String()
				}
				return unsupported(g, "SET STATEMENT … FOR a statement the wrapper must rewrite or watch (%s): send it alone", strings.TrimSpace(strings.ToUpper(p.text(p.sig[i+1]))))
			}
			// a statement that commits the open transaction does so under the prefix too
			p.implicitCommit = p.implicitCommit || pl.ImplicitCommit != nil
			p.runsDynamic = p.runsDynamic || pl.Dynamic
			return nil
		}
	}
	return unsupported("", "SET STATEMENT without FOR <statement>")
}

// control refuses, on a pool with guarded tables, the statements whose head makes them
// unsafe whatever else they say: transaction control as text, dynamic SQL (unless
// WithDynamicSQL), DDL that names a guarded table (unless WithDDL), a SET or LOCK that
// names one.
func (p *parser) control(head string, first int) error {
	if p.commitsImplicitly(head, first) {
		p.implicitCommit = true // refused inside a transaction only (implicitcommit.go)
	}
	switch head {
	case "BEGIN", "START", "COMMIT", "END", "ABORT", "XA":
		if head == "BEGIN" && p.kw(first+1, "NOT") && p.kw(first+2, "ATOMIC") {
			p.compoundTx(first)
			return p.dynamic("a compound statement (BEGIN NOT ATOMIC … END)")
		}
		return p.textTx(head)
	case "ROLLBACK":
		if p.kwIn(first+1, "TO") || (p.kwIn(first+1, "WORK", "TRANSACTION") && p.kw(first+2, "TO")) {
			p.savepoint = true // ROLLBACK TO SAVEPOINT: inside a wrapper transaction only
			return nil
		}
		return p.textTx(head)
	case "SAVEPOINT", "RELEASE":
		p.savepoint = true // inside a wrapper transaction only (savepoint.go)
	case "SET":
		if p.hasWord("AUTOCOMMIT") {
			return p.textTx("SET autocommit")
		}
		if p.kw(first+1, "STATEMENT") {
			if err := p.setStatementInner(first); err != nil {
				return err
			}
		}
		if g, ok := p.deepGuard(); ok && !p.userVarSet(first) {
			return unsupported(g, "a SET that names a guarded table (SET STATEMENT … FOR <statement> cannot be fenced)")
		}
	case "LOCK":
		if p.kw(first+1, "TABLES") || p.kw(first+1, "TABLE") && !p.rw.numbered {
			return p.textTx("LOCK TABLES (it commits the open transaction)")
		}
	case "EXPLAIN", "ANALYZE", "CREATE":
		// EXPLAIN ANALYZE EXECUTE name(…) and CREATE TABLE … AS EXECUTE name(…) (also
		// under EXPLAIN ANALYZE) run a prepared statement: dynamic SQL.
		if head != "CREATE" {
			if from, runs := p.explained(head); runs && from >= 0 && p.kw(from, "EXECUTE") {
				return p.dynamic(head + " … EXECUTE")
			}
		}
		if p.asExecute() {
			return p.dynamic("CREATE TABLE … AS EXECUTE")
		}
	case "TRUNCATE":
		if p.hasWord("CASCADE") {
			return unsupported("", "TRUNCATE … CASCADE on a pool with guarded tables: it also empties every table with a foreign key to the ones it names, guarded tables among them")
		}
	case "COPY":
		if p.hasWord("PROGRAM") {
			return unsupported("", "COPY … PROGRAM on a pool with guarded tables: the command it runs can write them")
		}
	case "BINLOG":
		return unsupported("", "BINLOG on a pool with guarded tables: it replays binary-log row events, which write tables without the wrapper and without firing the guards' triggers")
	case "EXECUTE", "EXEC", "PREPARE", "DO", "CALL":
		if head == "PREPARE" && p.rw.syn == sqllex.Postgres && p.kw(first+1, "TRANSACTION") {
			// PostgreSQL's PREPARE TRANSACTION 'gid' ends the session's transaction (it
			// is kept for COMMIT PREPARED, which any session may send): the caller's
			// later statements would run in autocommit and Commit would answer success
			// for writes that are not committed. Transaction control, whatever
			// WithDynamicSQL allows.
			return p.textTx("PREPARE TRANSACTION")
		}
		if head == "EXECUTE" {
			if err := p.immediateTx(first); err != nil {
				return err
			}
		}
		if head != "CALL" {
			// The text of a PREPARE … AS <write>, a DO block or an EXECUTE IMMEDIATE of a
			// literal (or of a CONCAT of literals) is visible: one that names a guarded
			// table is refused even when dynamic SQL is allowed — run unseen it would
			// write the table unfenced (red-team rt33a F9).
			if g, ok := p.deepGuard(); ok {
				return unsupported(g, "%s of a statement that names a guarded table", head)
			}
		}
		return p.dynamic(head)
	}
	if ddlHeads[head] {
		g, ok := p.deepGuard()
		if !ok {
			return nil
		}
		// Partition and inheritance DDL that moves a guarded table's rows without its
		// row triggers: refused like TRUNCATE, whatever WithDDL says (rowmove.go).
		if err := p.rowMoves(head, first); err != nil {
			return err
		}
		// An ALTER TABLE that renames, drops or replaces a column the guards read:
		// refused whatever WithDDL says (guardcolumn.go).
		if err := p.guardColumns(head, first); err != nil {
			return err
		}
		// DDL that renames or moves a guarded table, or another relation onto a
		// guarded name: refused whatever WithDDL says (tablemove.go).
		if err := p.movesGuardedName(head, first); err != nil {
			return err
		}
		// CREATE UNIQUE INDEX of a guarded table whose tombstone guard compares the
		// unique indexes of the install: refused whatever WithDDL says (uniquekey.go).
		if err := p.addsUniqueKey(head, first); err != nil {
			return err
		}
		if !p.rw.allowDDL {
			return unsupported(g, "DDL (%s) that names a guarded table through the fenced pool: run migrations on a plain connection (the driver without \"fenced-\"), or allow it with fencedsql.WithDDL(true)", head)
		}
		if p.hasWriteInWith() {
			return unsupported(g, "DDL whose query writes a guarded table")
		}
	}
	return nil
}

// controlEach applies control to every statement of a multi-statement string. A
// MariaDB compound statement (BEGIN NOT ATOMIC …; …; END) is one statement: dynamic SQL.
// A CREATE of a trigger or routine whose block body holds ';' (routinebody.go) is one
// statement, judged by its CREATE: its body's pieces, its END included, are not
// statements of the text.
func (p *parser) controlEach() error {
	if p.kw(0, "BEGIN") && p.kw(1, "NOT") && p.kw(2, "ATOMIC") {
		p.compoundTx(0)
		return p.dynamic("a compound statement (BEGIN NOT ATOMIC … END)")
	}
	start := 0
	for i := 0; i <= len(p.sig); i++ {
		if i < len(p.sig) && !p.punct(i, ";") {
			continue
		}
		if start < i && p.sig[start].Kind == sqllex.KindWord {
			if err := p.control(strings.ToUpper(p.text(p.sig[start])), start); err != nil {
				return err
			}
			if end := p.routineBodyEnd(start); end > i {
				i = end
			}
		}
		start = i + 1
	}
	return nil
}

// textTx refuses transaction control sent as SQL text.
func (p *parser) textTx(what string) error {
	return unsupported(p.firstGuard(), "transaction control as SQL text (%s) on a pool with guarded tables: use db.BeginTx / tx.Commit, which bind the transaction to the token and keep the wrapper's own transactions apart", what)
}

// asExecute reports CREATE TABLE … AS EXECUTE name [(…)] anywhere in the statement: AS
// EXECUTE and a name followed by the end, its argument list or WITH [NO] DATA (not an
// output name "AS execute").
func (p *parser) asExecute() bool {
	for i := 0; i+2 < len(p.sig); i++ {
		if p.kw(i, "AS") && p.kw(i+1, "EXECUTE") && p.isIdent(i+2) &&
			(i+3 >= len(p.sig) || p.punct(i+3, "(") || p.punct(i+3, ";") || p.kw(i+3, "WITH")) {
			return true
		}
	}
	return false
}

// dynamic refuses dynamic SQL unless WithDynamicSQL allows it.
func (p *parser) dynamic(what string) error {
	if p.rw.allowDynamic {
		p.runsDynamic = true
		return nil
	}
	return unsupported(p.firstGuard(), "dynamic SQL (%s) on a pool with guarded tables: the wrapper cannot see what it runs; allow it with fencedsql.WithDynamicSQL(true) and rely on the database-side guards", what)
}

// deepGuard returns the first guarded table named by an identifier, or inside a string
// literal or dollar-quoted body at identifier boundaries (a function or rule body, a
// PREPARE … FROM '…'); ok is false for none. An undecodable quoted identifier may name
// one: ok with an empty name.
func (p *parser) deepGuard() (string, bool) {
	if g := p.firstGuard(); g != "" {
		return g, true
	}
	if p.hasUndecodableIdent() {
		return "", true
	}
	for _, txt := range p.stringTexts(0, len(p.sig)) {
		// the same scanner protect uses for guard objects (escapes decoded loosely)
		if n := stringMentions(txt, p.rw.names...); n != "" {
			return p.rw.guards[n][0].String(), true
		}
	}
	return "", false
}

// identByte reports whether s[i] exists and can be part of an unquoted identifier.
func identByte(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z' || c >= 0x80
}

// checkExecComments refuses a statement whose executable comments could hold a write
// or name a guarded table, or that starts with one.
func (p *parser) checkExecComments() error {
	for i, t := range p.sig {
		if t.Kind != sqllex.KindExecComment {
			continue
		}
		body := p.text(t)
		bad := i == 0
		for _, w := range []string{"insert", "update", "delete", "replace", "merge", "truncate"} {
			bad = bad || ContainsFold(body, w)
		}
		for _, n := range p.rw.names {
			bad = bad || strings.Contains(strings.ToLower(body), n)
		}
		if bad {
			return unsupported(p.firstGuard(), "an executable comment (/*! … */) that may hold a write or name a guarded table")
		}
	}
	return nil
}

// pass returns the plan of a statement the analysis passes unchanged: its session
// plan (SessionPlan) or the shared one, marked Ambiguous when a session may read its
// text otherwise.
func (p *parser) pass() *Plan {
	amb := p.rw.sessionDependent(p.src)
	through := p.lockThrough()
	if pl := p.rw.SessionPlan(p.src); pl != nil {
		pl.Ambiguous = amb
		pl.LockThrough = through
		return pl
	}
	if through != nil {
		return &Plan{Kind: KindPass, NUser: -1, Ambiguous: amb, LockThrough: through}
	}
	if amb {
		return PassAmbiguous
	}
	return Passthrough
}

// with plans a statement that starts with a WITH list. Its queries must only read; the
// statement after them is planned as a write of its own kind (bun's bulk UPDATE … FROM
// a VALUES list, for one). A DELETE of a guarded table under WITH is refused: its
// fencing UPDATE would need the list too.
func (p *parser) with(first int, versioned bool) (*Plan, error) {
	main, ok := p.afterWithList(first)
	if !ok || p.hasWriteIn(first, main) {
		if p.hasWriteInWith() && p.mentionsGuard() {
			return nil, unsupported("", "a WITH list whose query writes (a data-modifying CTE) and that mentions a guarded table")
		}
		return p.pass(), nil
	}
	if first > 0 {
		if p.hasWriteInWith() && p.mentionsGuard() {
			return nil, unsupported("", "a parenthesised WITH … write that mentions a guarded table")
		}
		return p.pass(), nil
	}
	p.start = main
	switch {
	case p.kw(main, "UPDATE"):
		return p.update(versioned)
	case p.kw(main, "INSERT"):
		return p.insert(versioned)
	case p.kw(main, "DELETE"):
		// A DELETE of a table that is not guarded passes (it may read guarded tables,
		// in the list or its own clauses); one of a guarded table is refused: its
		// fencing UPDATE would need the list too.
		return p.delete(versioned)
	case p.kw(main, "SELECT"):
		return p.lockingRead(first)
	}
	if p.hasWriteInWith() && p.mentionsGuard() {
		return nil, unsupported(p.firstGuard(), "WITH … %s on a guarded table", strings.ToUpper(p.text(p.sig[main])))
	}
	return p.pass(), nil
}

// afterWithList returns the sig index of the statement after the WITH list that starts
// at sig[first]: WITH [RECURSIVE] name [(columns)] AS [[NOT] MATERIALIZED] (query), ….
func (p *parser) afterWithList(first int) (int, bool) {
	i := first + 1
	if p.kw(i, "RECURSIVE") {
		i++
	}
	for {
		if !p.isIdent(i) {
			return 0, false
		}
		i++
		if p.punct(i, "(") {
			if i = p.matching(i); i < 0 {
				return 0, false
			}
			i++
		}
		if !p.kw(i, "AS") {
			return 0, false
		}
		i++
		if p.kw(i, "NOT") {
			i++
		}
		if p.kw(i, "MATERIALIZED") {
			i++
		}
		if !p.punct(i, "(") {
			return 0, false
		}
		if i = p.matching(i); i < 0 {
			return 0, false
		}
		i++
		if !p.punct(i, ",") {
			return i, i < len(p.sig)
		}
		i++
	}
}

// hasWriteIn reports a write keyword (not a locking FOR [NO KEY] UPDATE) in sig[from:to].
func (p *parser) hasWriteIn(from, to int) bool {
	for i := from; i < to; i++ {
		switch {
		case p.kw(i, "INSERT"), p.kw(i, "DELETE"), p.kw(i, "MERGE"), p.kw(i, "REPLACE"):
			return true
		case p.kw(i, "UPDATE"):
			if i > 0 && (p.kw(i-1, "FOR") || p.kw(i-1, "KEY")) {
				continue
			}
			return true
		}
	}
	return false
}

// hasWriteInWith finds INSERT/UPDATE/DELETE/MERGE used as a statement inside a WITH,
// ignoring the locking clause "FOR [NO KEY] UPDATE".
func (p *parser) hasWriteInWith() bool {
	for i := range p.sig {
		switch {
		case p.kw(i, "INSERT"), p.kw(i, "DELETE"), p.kw(i, "MERGE"):
			return true
		case p.kw(i, "UPDATE"):
			if i > 0 && (p.kw(i-1, "FOR") || p.kw(i-1, "KEY")) {
				continue
			}
			return true
		}
	}
	return false
}

func (p *parser) guardName(g *Table) string {
	if g != nil {
		return g.String()
	}
	return p.firstGuard()
}

// unknownShape handles a write statement the parser does not recognise: refused when it
// mentions a guarded table, passed through otherwise.
func (p *parser) unknownShape(what string) (*Plan, error) {
	if p.mentionsGuard() {
		return nil, unsupported("", "%s of a shape the rewriter does not know", what)
	}
	return p.pass(), nil
}
