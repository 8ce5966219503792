package postgres

import "strings"

// inTombstoneCheck reports whether where, a PostgreSQL error's context (PgError.Where:
// one line per level, innermost first), places the error inside a tombstone guard's
// function (tombFunc): a line naming a function "[schema.]fencedsql_tombstone_<t>()",
// either name quoted where it needs quotes ("PL/pgSQL function
// public.fencedsql_tombstone_acc() line 51 at SQL statement" in English; the words
// around the name follow lc_messages, so only the name is read). A lock wait there
// is a guarded write's wait for another transaction's record of the key's tombstone —
// a claim of the absent key — that the plain write would not have (red-team rt64a
// F3): the guard's triggers run AFTER the row is in, past the write's own waits on
// the table's unique indexes.
func inTombstoneCheck(where string) bool {
	for line := range strings.SplitSeq(where, "\n") {
		for rest := line; ; {
			i := strings.Index(rest, tombFuncPrefix)
			if i < 0 {
				break
			}
			if i > 0 && strings.IndexByte(` ."`, rest[i-1]) >= 0 {
				if strings.Contains(rest[i+len(tombFuncPrefix):], "()") {
					return true
				}
			}
			rest = rest[i+len(tombFuncPrefix):]
		}
	}
	return false
}
