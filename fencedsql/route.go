package fencedsql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// passKeywords are the head keywords of statements that pass unchanged (after the
// checks in plan) even when they mention a guarded table.
var passKeywords = map[string]bool{
	"SELECT": true, "VALUES": true, "TABLE": true, "SHOW": true, "DESCRIBE": true, "DESC": true,
	"BEGIN": true, "START": true, "COMMIT": true, "ROLLBACK": true, "SAVEPOINT": true,
	"RELEASE": true, "END": true, "ABORT": true, "CREATE": true, "ALTER": true, "DROP": true,
	"COMMENT": true, "GRANT": true, "REVOKE": true, "VACUUM": true, "PRAGMA": true,
	"LOCK": true, "UNLOCK": true, "USE": true, "LISTEN": true, "UNLISTEN": true, "NOTIFY": true,
	"FETCH": true, "CLOSE": true, "DISCARD": true, "RESET": true, "REINDEX": true,
	"CLUSTER": true, "CHECKPOINT": true, "CALL": true, "EXECUTE": true,
	"DEALLOCATE": true, "DECLARE": true, "MOVE": true, "RENAME": true,
	"ATTACH": true, "DETACH": true, "FLUSH": true, "KILL": true, "OPTIMIZE": true,
	"CHECK": true, "REPAIR": true, "SET": true,
}

// plan classifies the statement by its head keyword and hands it to the planner of
// its kind; statements that cannot write a guarded table pass unchanged.
func (p *parser) plan(versioned bool) (*plan, error) {
	if len(p.sig) == 0 {
		return passPlan, nil
	}
	// MySQL executable comments (/*! … */) run their content: a write or a guarded
	// table inside one cannot be analysed, whatever surrounds it.
	if err := p.checkExecComments(); err != nil {
		return nil, err
	}
	// Multi-statement strings: anything significant after a top-level ';'.
	for i, t := range p.sig {
		if t.Kind == sqllex.KindPunct && p.text(t) == ";" && i+1 < len(p.sig) {
			if p.mentionsGuard() || p.hasUndecodableIdent() {
				return nil, unsupported(p.firstGuard(), "a multi-statement string that mentions a guarded table")
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
	if first > 0 && head != "SELECT" && head != "VALUES" && head != "TABLE" && head != "WITH" {
		return nil, unsupported(p.firstGuard(), "a parenthesised %s", strings.TrimSpace(head+" statement"))
	}
	switch head {
	case "PREPARE", "DO":
		// PostgreSQL PREPARE … AS <write>, MySQL PREPARE … FROM '<write>', DO blocks:
		// the statement text mentions a guarded table (the pre-filter said so) and may
		// hide a write in a string.
		return nil, unsupported(p.firstGuard(), "%s of a statement that mentions a guarded table", head)
	}
	// A quoted identifier the lexer cannot decode (PostgreSQL U&"…" escapes) could name
	// a guarded table: refuse it anywhere but in statements that cannot write.
	if p.hasUndecodableIdent() && !(passKeywords[head] && head != "SET") {
		return nil, unsupported("", "a quoted identifier with escapes (U&\"…\") in a statement that may write")
	}
	switch head {
	case "UPDATE":
		return p.update(versioned)
	case "DELETE":
		return p.delete(versioned)
	case "INSERT":
		return p.insert(versioned)
	case "EXPLAIN", "ANALYZE":
		// EXPLAIN ANALYZE (PostgreSQL) and ANALYZE (MariaDB) execute the write.
		if p.hasWord("INSERT", "UPDATE", "DELETE", "MERGE", "REPLACE") && p.mentionsGuard() {
			return nil, unsupported("", "%s of a write to a guarded table", head)
		}
		return p.pass(), nil
	case "WITH":
		return p.with(first, versioned)
	case "SELECT":
		if first == 0 {
			return p.lockingRead()
		}
	}
	if first > 0 {
		return p.pass(), nil // a parenthesised query
	}
	if passKeywords[head] {
		return p.pass(), nil
	}
	// TRUNCATE, COPY, LOAD, MERGE, REPLACE, UPSERT, HANDLER and anything unknown.
	if g := p.firstGuard(); g != "" {
		return nil, unsupported(g, "%s on a guarded table", strings.ToUpper(strings.TrimSpace(head+" statement")))
	}
	return p.pass(), nil
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
			bad = bad || containsFold(body, w)
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

func (p *parser) pass() *plan {
	if p.rw.setsSession(p.src) {
		return &plan{kind: kindPass, nUser: -1, resetsSession: true}
	}
	return passPlan
}

// with plans a statement that starts with a WITH list. Its queries must only read; the
// statement after them is planned as a write of its own kind (bun's bulk UPDATE … FROM
// a VALUES list, for one). A DELETE under WITH is refused: its fencing UPDATE would
// need the list too.
func (p *parser) with(first int, versioned bool) (*plan, error) {
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
	case p.kw(main, "SELECT"):
		return p.pass(), nil
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

func (p *parser) guardName(g *guard) string {
	if g != nil {
		return g.String()
	}
	return p.firstGuard()
}

// mentions a guarded table, passed through otherwise.
func (p *parser) unknownShape(what string) (*plan, error) {
	if p.mentionsGuard() {
		return nil, unsupported("", "an %s of a shape the rewriter does not know", what)
	}
	return p.pass(), nil
}
