package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// lockTail explains why the text after the locking clause at sig[lock] of a locking
// read the planner would claim cannot be carried by the claim, or returns "". The
// claim rebuilds the read from its parts up to the locking clause (its fencing UPDATE
// and its read), so whatever follows the clause and is not one of the parts it keeps
// would be dropped: the statement run would not be the caller's (red-team rt65a F4:
// `FOR UPDATE UNION ALL SELECT …` returned the first branch's rows only, `FOR UPDATE
// garbage words` ran without the server's syntax error). What it keeps, in order: an OF
// list (names, qualified or not, separated by commas), then NOWAIT, SKIP LOCKED or
// WAIT n (judged by unclaimableLock and lockNotTaken), then the end of the statement
// (a ';' and what follows it are the multi-statement check's). Anything else is
// refused before anything is sent (ErrUnsupported): the caller's text is never
// replaced by another. The same on every dialect (MySQL/MariaDB: lockNotTaken judges
// the same tail for MariaDB's sake first; SQLite has no locking clause).
func (p *parser) lockTail(lock int) string {
	k := lock + p.lockLen(lock)
	if p.kw(k, "OF") {
		for k++; ; k++ {
			if !p.isIdent(k) {
				return p.lockTailRefused(lock, k)
			}
			for p.punct(k+1, ".") && p.isIdent(k+2) {
				k += 2
			}
			if !p.punct(k+1, ",") {
				k++
				break
			}
			k++
		}
	}
	switch {
	case p.kw(k, "NOWAIT"):
		k++
	case p.kw(k, "SKIP") && p.kw(k+1, "LOCKED"):
		k += 2
	case p.kw(k, "WAIT") && k+1 < len(p.sig) && p.sig[k+1].Kind == sqllex.KindNumber:
		k += 2
	}
	if k >= len(p.sig) || p.punct(k, ";") {
		return ""
	}
	return p.lockTailRefused(lock, k)
}

// lockTailRefused is lockTail's refusal of the text from sig[k] on.
func (p *parser) lockTailRefused(lock, k int) string {
	if k >= len(p.sig) {
		return "an OF list after the locking clause " + p.lockText(lock) + " that ends without a name"
	}
	return "text after the locking clause " + p.lockText(lock) + " (" + p.src[p.sig[k].Start:p.sig[len(p.sig)-1].End] +
		") that the claim cannot carry (it rebuilds the read up to the clause, so the text would be dropped): end the statement with the locking clause, or write a set operation's other branches as statements of their own"
}
