package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// explain plans EXPLAIN, DESCRIBE/DESC and ANALYZE. A plan that is only shown runs
// nothing, so it passes whatever it explains: PostgreSQL's EXPLAIN [VERBOSE] … and
// EXPLAIN (option, …) … whose ANALYZE option is absent or written false (FALSE, OFF,
// 0); MySQL/MariaDB's EXPLAIN/DESCRIBE [EXTENDED | PARTITIONS | FORMAT = name] …;
// SQLite's EXPLAIN [QUERY PLAN] …; except, on MySQL/MariaDB, one of a locking read of
// a guarded table, which locks the rows it plans from (a claim refused with a token).
// Every other form is taken as executing the
// statement it explains (PostgreSQL's EXPLAIN ANALYZE, MySQL's EXPLAIN ANALYZE,
// MariaDB's ANALYZE <statement>, an option list it cannot read): with a write and a
// guarded table it is refused, with a locking read of one it is a claim refused when
// it carries a token.
func (p *parser) explain(head string) (*Plan, error) {
	from, runs := p.explained(head)
	if from < 0 {
		// DESCRIBE t, ANALYZE t (statistics): no statement follows.
		return p.pass(), nil
	}
	if !runs {
		// MySQL/MariaDB plan a read of a row picked by an equality on a unique key by
		// reading that row, with the lock its statement asks for: a shown-only plan of
		// a locking read locks the row unclaimed (red-team rt40e F1).
		if p.rw.syn == sqllex.MySQL {
			if at := p.anyLock(from, len(p.sig)); at >= 0 && p.mayNameGuard() {
				return p.claimRefused(p.firstGuard(), "%s of a locking read (%s) of a guarded table: MySQL/MariaDB lock the rows they read while planning it, and cannot be claimed exactly", head, p.lockText(at))
			}
		}
		p.shownOnly = true
		return p.pass(), nil
	}
	if p.hasWriteIn(from, len(p.sig)) && p.mayNameGuard() {
		return nil, unsupported(p.firstGuard(), "%s of a write to a guarded table (it executes the write; EXPLAIN without ANALYZE only shows the plan)", head)
	}
	if at := p.anyLock(from, len(p.sig)); at >= 0 && p.mayNameGuard() {
		return p.claimRefused(p.firstGuard(), "%s of a locking read (%s) of a guarded table: it executes the read and cannot be claimed exactly", head, p.lockText(at))
	}
	return p.pass(), nil
}

// explainedHeads are the statements an EXPLAIN or ANALYZE may take.
var explainedHeads = map[string]bool{
	"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true, "REPLACE": true,
	"WITH": true, "VALUES": true, "TABLE": true, "EXECUTE": true, "DECLARE": true, "CREATE": true,
	"(": true,
}

// explained returns the sig index of the statement an EXPLAIN, DESCRIBE or ANALYZE at
// sig[0] takes (-1 when none follows: DESCRIBE t, ANALYZE t) and whether it runs it.
// Anything it cannot read runs.
func (p *parser) explained(head string) (from int, runs bool) {
	isStmt := func(i int) bool {
		if p.punct(i, "(") { // a parenthesized query, at any depth; anything else runs
			j := i + 1
			for p.punct(j, "(") {
				j++
			}
			return p.kwIn(j, "SELECT", "WITH", "VALUES", "TABLE")
		}
		return i < len(p.sig) && explainedHeads[strings.ToUpper(p.text(p.sig[i]))] && p.isIdent(i)
	}
	i := 1
	runs = head == "ANALYZE"
	if p.rw.numbered && head == "EXPLAIN" && p.punct(1, "(") {
		end := p.matching(1)
		if end < 0 {
			return 1, true
		}
		ok, analyze := p.explainOptions(2, end)
		return end + 1, !ok || analyze
	}
	for i < len(p.sig) {
		switch {
		case p.kwIn(i, "ANALYZE", "ANALYSE"):
			runs = true
			i++
		case p.kwIn(i, "VERBOSE", "EXTENDED", "PARTITIONS"):
			i++
		case p.kw(i, "QUERY") && p.kw(i+1, "PLAN"):
			i += 2
		case p.kw(i, "FORMAT") && p.punct(i+1, "=") && p.isIdent(i+2):
			i += 3
		case isStmt(i):
			return i, runs
		default:
			if i == 1 && head != "EXPLAIN" {
				return -1, runs // DESCRIBE t, ANALYZE t
			}
			return i, true
		}
	}
	return -1, runs
}

// explainOptions reads PostgreSQL's EXPLAIN option list in sig[from:to]: name [value]
// items separated by commas. ok is false for a list it cannot read; analyze reports an
// ANALYZE option that is not written false.
func (p *parser) explainOptions(from, to int) (ok, analyze bool) {
	i := from
	for i < to {
		if !p.isIdent(i) {
			return false, false
		}
		n, decoded := p.ident(i) // PostgreSQL reads a quoted option name too: ("analyze")
		if !decoded {
			return false, false
		}
		name := strings.ToUpper(n)
		i++
		valEnd := i
		for valEnd < to && !p.punct(valEnd, ",") {
			valEnd++
		}
		if name == "ANALYZE" || name == "ANALYSE" {
			off := valEnd == i+1 && (p.kwIn(i, "FALSE", "OFF") || p.text(p.sig[i]) == "0")
			if !off {
				analyze = true
			}
		}
		if valEnd > i+1 {
			return false, false // a value of more than one token
		}
		i = valEnd
		if i < to {
			i++ // ','
			if i == to {
				return false, false
			}
		}
	}
	return true, analyze
}
