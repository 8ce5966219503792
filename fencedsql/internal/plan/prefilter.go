package plan

import (
	"strings"
)

// mayMention is the fast pre-filter: a statement whose text contains no guarded table
// name (case-insensitively) cannot write one. It over-approximates the server's
// folding: with a non-ASCII guarded name it folds every letter (so a non-ASCII case
// twin, which caseTwin refuses, is seen too). PostgreSQL's U&"…" identifiers can spell a
// name with escapes, so their presence always forces a full analysis.
func (rw *Planner) mayMention(sql string) bool {
	if rw.nonASCII {
		lower := strings.ToLower(sql)
		for _, n := range rw.unames {
			if strings.Contains(lower, n) {
				return true
			}
		}
	}
	for _, n := range rw.names {
		if ContainsFold(sql, n) {
			return true
		}
	}
	return rw.syn.EStrings && (strings.Contains(sql, `U&"`) || strings.Contains(sql, `u&"`))
}

// mayLock is the pre-filter of Plan.LockThrough: on a pool with guarded tables, a
// statement that may hold a locking clause (its text holds UPDATE or SHARE).
func (rw *Planner) mayLock(sql string) bool {
	return len(rw.names) > 0 && (ContainsFold(sql, "update") || ContainsFold(sql, "share"))
}

// SetsSession reports whether a statement sent as written may change the session
// settings the dialect's session check reads (mayChangeSession), so that the check
// runs again before the next guarded write.
func (rw *Planner) SetsSession(sql string) bool {
	return rw.sessionChecked && MayChangeSession(sql, rw.syn)
}

// ContainsFold reports whether s contains sub (ASCII lower case) ignoring ASCII case.
func ContainsFold(s, sub string) bool {
	n := len(sub)
	if n == 0 {
		return true
	}
	first := sub[0]
	for i := 0; i+n <= len(s); i++ {
		c := s[i]
		if c|0x20 != first && c != first {
			continue
		}
		j := 1
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}
