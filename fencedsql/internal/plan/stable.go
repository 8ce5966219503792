package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// A DELETE (and a claimed locking read) runs as two statements over the same rows: a
// fencing UPDATE selects and stamps them, then the caller's statement selects them
// again. That is exact only when the second selection finds the rows the first one
// did. The fencing UPDATE changes the token and version columns and, on PostgreSQL, the
// row's physical locator and transaction stamps; a non-deterministic function or a
// LIMIT in a subquery over the same table can pick other rows the second time. Such
// conditions refuse the two-statement form rather than run it inexactly
// (Plan.TwoStepErr): the planner keeps the plan, and the wrapper refuses it, with a
// token, only where it would send the two statements. The one-statement forms select
// once — a DELETE with the dialect's delete fence (Plan.One: PostgreSQL, MySQL/MariaDB
// with the guard installed) and PostgreSQL's one-statement claim (Plan.ClaimOne) —
// and run them, except the claim by row locator (ORDER BY, LIMIT, OFFSET, NOWAIT),
// which evaluates the selection in two locator queries and is refused.

// nondeterministic are functions whose result may differ between the two statements.
var nondeterministic = map[string]bool{
	"random": true, "rand": true, "uuid": true, "uuid_short": true, "gen_random_uuid": true,
	"uuid_generate_v1": true, "uuid_generate_v4": true, "newid": true, "random_bytes": true,
	"randomblob": true, "clock_timestamp": true, "timeofday": true, "sysdate": true,
	"setseed": true, "nextval": true, "statement_timestamp": true, "row_count": true,
	"changes": true, "found_rows": true, "last_insert_id": true, "last_insert_rowid": true,
	// PostgreSQL: NULL until the transaction's first write (the fencing UPDATE is one),
	// and a snapshot that READ COMMITTED takes anew for each statement (red-team rt27a).
	"pg_current_xact_id_if_assigned": true, "txid_current_if_assigned": true,
	"pg_current_snapshot": true, "txid_current_snapshot": true,
}

// statementClock are the functions, and the keywords usable without parentheses, that
// read the clock of the statement on MySQL/MariaDB and SQLite: the second statement
// runs later and reads a later time (a lock wait in the fencing UPDATE makes it
// seconds). PostgreSQL's now() and CURRENT_TIMESTAMP read the transaction's start,
// the same in both statements, which run in one transaction. The value says whether
// the name reads the clock only when called with parentheses (NOW(); UNIX_TIMESTAMP()
// and unixepoch() only without arguments).
var statementClock = map[string]bool{
	"now": true, "curdate": true, "curtime": true, "unix_timestamp": true, "unixepoch": true,
	"current_timestamp": false, "current_date": false, "current_time": false, "localtime": false,
	"localtimestamp": false, "utc_timestamp": false, "utc_date": false, "utc_time": false,
}

// noArgClock are SQLite's date functions, which read 'now' when called without a time.
var noArgClock = map[string]bool{"date": true, "time": true, "datetime": true, "julianday": true, "strftime": true}

// readsStatementClock reports whether sig[k] reads the statement's clock
// (statementClock; SQLite's 'now' argument of its date functions), on the dialects
// whose statements each read their own.
func (p *parser) readsStatementClock(k int, lower string) bool {
	if p.rw.numbered {
		return false
	}
	if lower == "now" && p.sig[k].Kind != sqllex.KindWord {
		// SQLite's 'now' (or "now", read as a string) as an argument of a date function.
		return p.punct(k-1, "(") || p.punct(k-1, ",")
	}
	if lower == "timestamp" && (p.punct(k-1, "@@") || p.punct(k-1, ".") && p.punct(k-3, "@@")) {
		return true // @@timestamp, @@session.timestamp: the statement's start
	}
	call, known := statementClock[lower]
	switch {
	case noArgClock[lower]:
		// SQLite's date functions without arguments, strftime with its format only.
		return p.punct(k+1, "(") && (p.punct(k+2, ")") || lower == "strftime" && p.punct(k+3, ")"))
	case !known:
		return false
	case lower == "unix_timestamp" || lower == "unixepoch":
		return p.punct(k+1, "(") && p.punct(k+2, ")")
	case call:
		return p.punct(k+1, "(")
	}
	return p.sig[k].Kind == sqllex.KindWord || p.punct(k+1, "(")
}

// clockSelection explains how sig[from:to] reads the statement's clock
// (readsStatementClock), or returns "". The second statement reads a later time: with
// a column the fencing UPDATE changes (ON UPDATE CURRENT_TIMESTAMP), a row it stamped
// can leave the window while one the holder stamped before enters it (red-team rt16k
// F2). The two-statement DELETE is refused; a claim is keyed instead (claim_keyed.go),
// its read restricted to the rows it stamped.
func (p *parser) clockSelection(from, to int) string {
	for k := from; k < to; k++ {
		if !p.isIdent(k) {
			continue
		}
		if n, ok := p.ident(k); ok && p.readsStatementClock(k, strings.ToLower(n)) {
			return "reads the statement's clock (" + n + "), which the second statement reads later: pass the time as an argument"
		}
	}
	return ""
}

// rowLocators are PostgreSQL system columns that an UPDATE changes.
var rowLocators = map[string]bool{"ctid": true, "xmin": true, "xmax": true, "cmin": true, "cmax": true}

// unstableSelection explains why the rows selected by sig[from:to] (a WHERE or ORDER BY
// clause of a statement on g) may differ once the fencing UPDATE ran, or returns "".
func (p *parser) unstableSelection(g *Table, from, to int) string {
	selfRead, limited := false, false
	for k := from; k < to; k++ {
		switch {
		case p.kw(k, "LIMIT"), p.kw(k, "FETCH"), p.kw(k, "OFFSET"), p.kw(k, "TOP"), p.kw(k, "TABLESAMPLE"):
			limited = true
		case p.isIdent(k):
			n, fence, ok := p.fenceColumn(g, k)
			if !ok {
				return "an identifier it cannot decode"
			}
			lower := strings.ToLower(n)
			switch {
			case fence:
				return "reads " + quoteName(n) + " (use fencedsql.ExpectVersion for a version check)"
			case p.rw.numbered && rowLocators[lower] && !p.punct(k+1, "("):
				return "reads the row locator " + quoteName(n) + ", which the fencing UPDATE changes"
			case nondeterministic[lower] && p.punct(k+1, "("):
				return "calls the non-deterministic " + n + "()"
			}
			if (p.kw(k-1, "FROM") || p.kw(k-1, "JOIN")) && k-1 >= from {
				if r, ok := p.parseName(k); ok && p.rw.Lookup(r.parts).Base() == g.Base() {
					selfRead = true
				}
			}
		}
	}
	if selfRead && limited {
		return "selects rows with a limited subquery over the same table"
	}
	return ""
}

func quoteName(n string) string { return `"` + n + `"` }
