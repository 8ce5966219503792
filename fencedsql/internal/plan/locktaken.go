package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// lockNotTaken explains why the server would reject the locking clause at sig[lock] of
// a locking read the planner would claim, or returns "". The claim's fencing UPDATE
// does not carry the clause: sent, it would stamp the rows and the caller's read would
// then fail with the server's syntax error, leaving the transaction rollback-only
// (red-team rt31c F6). So a clause the server does not take is refused before anything
// is sent:
//   - SQLite has no locking clause at all;
//   - MariaDB takes FOR UPDATE and LOCK IN SHARE MODE (with NOWAIT, WAIT n or SKIP
//     LOCKED after them, judged by unclaimableLock), not MySQL 8's FOR SHARE and OF
//     list nor PostgreSQL's FOR NO KEY UPDATE and FOR KEY SHARE, and nothing else
//     after the clause. The MySQL dialect serves both servers, so it takes only what
//     both take (MySQL 8 takes FOR UPDATE and LOCK IN SHARE MODE too).
//
// PostgreSQL's own parser is left to judge PostgreSQL's clauses: there every error
// aborts the transaction anyway, the stamp with it.
func (p *parser) lockNotTaken(lock int) string {
	switch p.rw.syn {
	case sqllex.SQLite:
		return "SELECT … " + p.lockText(lock) + " on SQLite, which has no locking clause (the server would reject it after the claim stamped the rows): write the row first (an UPDATE takes SQLite's write lock and is fenced)"
	case sqllex.MySQL:
	default:
		return ""
	}
	what := p.lockText(lock)
	if what != "FOR UPDATE" && what != "LOCK IN SHARE MODE" {
		return "SELECT … " + what + ", which MariaDB does not take (the server would reject it after the claim stamped the rows): lock with FOR UPDATE or LOCK IN SHARE MODE"
	}
	k := lock + p.lockLen(lock)
	if p.kw(k, "OF") {
		return "SELECT … " + what + " OF, which MariaDB does not take (the server would reject it after the claim stamped the rows): lock the rows of the table in the FROM clause without OF"
	}
	switch {
	case p.kw(k, "NOWAIT"):
		k++
	case p.kw(k, "WAIT") && k+1 < len(p.sig) && p.sig[k+1].Kind == sqllex.KindNumber:
		k += 2
	case p.kw(k, "SKIP") && p.kw(k+1, "LOCKED"):
		k += 2
	}
	if k < len(p.sig) && !p.punct(k, ";") {
		return "SELECT … " + what + " followed by " + p.src[p.sig[k].Start:p.sig[len(p.sig)-1].End] + ", which MariaDB does not take after a locking clause (the server would reject it after the claim stamped the rows)"
	}
	return ""
}
