package plan

import "strings"

// On a pool with guarded tables, some statements are refused whatever they name:
// transaction control sent as text (the wrapper's own transaction around a DELETE would
// commit the caller's) and dynamic SQL (the SQL it runs is built at run time). Their
// head keyword is found without tokenizing, so that the pre-filter can still pass every
// other statement that names no guarded table untouched.

// controlHeads are the head keywords that need a full analysis even when the text names
// no guarded table.
var controlHeads = map[string]bool{
	"BEGIN": true, "START": true, "COMMIT": true, "ROLLBACK": true, "END": true, "ABORT": true,
	"XA": true, "SET": true, "EXECUTE": true, "EXEC": true, "PREPARE": true, "DO": true,
	"CALL": true, "LOCK": true,
}

// protectHeads start the DDL that can remove or disable the guards without naming
// them (DROP SCHEMA … CASCADE, DROP OWNED, ALTER TABLE … DISABLE TRIGGER, …) or name
// them in a body written with escapes (CREATE FUNCTION … AS E'…'): protect judges them.
var protectHeads = map[string]bool{"DROP": true, "ALTER": true, "REASSIGN": true, "CREATE": true}

// controlHead reports whether sql, on a pool with guarded tables, starts with one of
// controlHeads or with something the cheap scan cannot see past (an executable comment).
func (rw *Planner) controlHead(sql string) bool {
	if len(rw.names) == 0 {
		return false
	}
	if strings.IndexByte(sql, ';') >= 0 {
		return true // a multi-statement string: each statement's head counts
	}
	i := 0
	for i < len(sql) {
		switch c := sql[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '(':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return false
			}
			i += j + 1
		case c == '#' && rw.syn.HashComments:
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return false
			}
			i += j + 1
		case strings.HasPrefix(sql[i:], "/*"):
			if strings.HasPrefix(sql[i:], "/*!") || strings.HasPrefix(sql[i:], "/*M!") || strings.HasPrefix(sql[i:], "/*+") {
				// An executable comment first is not a control head by itself: on a
				// dialect with executable comments mayProtect sends every text holding
				// "/*" to the full analysis, which judges each reading (execcomment.go).
				return false
			}
			end := skipComment(sql, i, rw.syn.NestedComments)
			if end < 0 {
				return true
			}
			i = end
		default:
			j := i
			for j < len(sql) && (sql[j]|0x20 >= 'a' && sql[j]|0x20 <= 'z' || sql[j] == '_' ||
				j > i && (sql[j] >= '0' && sql[j] <= '9' || sql[j] == '$')) {
				j++
			}
			return j > i && (controlHeads[strings.ToUpper(sql[i:j])] || protectHeads[strings.ToUpper(sql[i:j])])
		}
	}
	return false
}

// skipComment returns the offset after the /* comment at sql[i:], or -1 if it does not
// end; nested comments nest when the dialect says so (PostgreSQL).
func skipComment(sql string, i int, nested bool) int {
	depth := 0
	for i+1 < len(sql) {
		switch {
		case sql[i] == '/' && sql[i+1] == '*':
			if depth > 0 && !nested {
				i++
				continue
			}
			depth++
			i += 2
		case sql[i] == '*' && sql[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return -1
}
