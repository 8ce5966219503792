// The fuzz no-bypass oracle: whether a text, as the server runs it, writes a guarded table.

package fencedsql

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// fzExpandExec returns the text MySQL executes: /*! … */ and /*M! … */ comments
// replaced by their content (version number dropped), /*+ … */ hints by a blank.
func fzExpandExec(src string, toks []sqllex.Token) (string, bool) {
	var b strings.Builder
	changed := false
	for _, tk := range toks {
		txt := tk.Text(src)
		if tk.Kind != sqllex.KindExecComment {
			b.WriteString(txt)
			continue
		}
		changed = true
		body := strings.TrimSuffix(txt, "*/")
		switch {
		case strings.HasPrefix(body, "/*!"):
			body = body[3:]
		case strings.HasPrefix(body, "/*M!"):
			body = body[4:]
		default: // optimizer hint: ignored by the server if not understood
			b.WriteString(" ")
			continue
		}
		body = strings.TrimLeft(body, "0123456789")
		b.WriteString(" " + body + " ")
	}
	return b.String(), changed
}

// fzWritesGuard is the no-bypass oracle. It returns a description when src, as the
// server reads it, contains a statement that writes a guarded table: a statement whose
// head keyword (after any opening parentheses) is INSERT/UPDATE/DELETE/REPLACE/MERGE/
// TRUNCATE/COPY … FROM, followed by its modifiers and INTO/FROM/ONLY/TABLE, then a
// guarded name (or an undecodable U&"…" one); MySQL multi-table forms whose SET
// targets or DELETE targets are a guarded table; and, inside WITH, EXPLAIN, ANALYZE
// and PREPARE, any write keyword so followed. It has no false positives for valid SQL:
// each pattern it reports is a write of that table in the dialect.
func fzWritesGuard(rw testPlanner, src string) string {
	return fzWritesGuardDepth(rw, src, 0)
}

func fzWritesGuardDepth(rw testPlanner, src string, depth int) string {
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		if fzMayMention(rw, src) && depth == 0 {
			return "the input does not lex, yet names a guarded table"
		}
		return ""
	}
	if rw.Syntax().ExecComments {
		if exp, changed := fzExpandExec(src, toks); changed {
			etoks, err := sqllex.Lex(exp, rw.Syntax())
			if err != nil {
				// Cannot model the server: report only an executable comment holding both
				// a write keyword and a guarded name.
				for _, tk := range toks {
					if tk.Kind != sqllex.KindExecComment {
						continue
					}
					body := strings.ToLower(tk.Text(src))
					write := false
					for _, w := range []string{"insert", "update", "delete", "replace", "merge", "truncate"} {
						write = write || strings.Contains(body, w)
					}
					if write && fzMayMention(rw, body) {
						return "an executable comment holds a write and a guarded name"
					}
				}
				return ""
			}
			src, toks = exp, etoks
		}
	}
	sig := sqllex.Significant(toks)
	start := 0
	for start <= len(sig) {
		end := start
		for end < len(sig) && !fzPunct(src, sig[end], ";") {
			end++
		}
		if why := fzStmtWrites(rw, src, sig[start:end], depth); why != "" {
			return why
		}
		start = end + 1
	}
	return ""
}

func fzStmtWrites(rw testPlanner, src string, sig []sqllex.Token, depth int) string {
	i := 0
	for i < len(sig) && fzPunct(src, sig[i], "(") {
		i++
	}
	if i >= len(sig) || sig[i].Kind != sqllex.KindWord {
		return ""
	}
	head := strings.ToUpper(sig[i].Text(src))
	switch head {
	case "INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE", "TRUNCATE", "COPY", "LOAD":
		if why := fzWriteAt(rw, src, sig, i); why != "" {
			return why
		}
	case "WITH", "EXPLAIN", "ANALYZE", "PREPARE":
		if head == "EXPLAIN" && !fzExplainRuns(src, sig, i) {
			return "" // shows a plan, runs nothing
		}
		for k := i + 1; k < len(sig); k++ {
			if fzKw(src, sig, k, "UPDATE") && fzKw(src, sig, k-1, "FOR", "KEY") {
				continue // a locking clause or ON DUPLICATE KEY UPDATE
			}
			if fzKw(src, sig, k, "INSERT", "UPDATE", "DELETE", "MERGE") {
				if why := fzWriteAt(rw, src, sig, k); why != "" {
					return head + " holding " + why
				}
			}
		}
		// MySQL PREPARE s FROM '<statement>'
		if head == "PREPARE" && depth < 2 {
			for _, tk := range sig[i:] {
				if tk.Kind == sqllex.KindString {
					txt := tk.Text(src)
					if len(txt) >= 2 && (txt[0] == '\'' || txt[0] == '"') {
						inner := strings.ReplaceAll(txt[1:len(txt)-1], txt[:1]+txt[:1], txt[:1])
						if why := fzWritesGuardDepth(rw, inner, depth+1); why != "" {
							return "PREPARE of " + why
						}
					}
				}
			}
		}
	}
	return ""
}

// fzExplainRuns: an EXPLAIN at sig[i] runs its statement only with an ANALYZE (or
// ANALYSE) word before it that is not followed by FALSE, OFF or 0.
func fzExplainRuns(src string, sig []sqllex.Token, i int) bool {
	for k := i + 1; k < len(sig) && !fzKw(src, sig, k, "INSERT", "UPDATE", "DELETE", "MERGE", "REPLACE", "SELECT", "WITH"); k++ {
		if fzKw(src, sig, k, "ANALYZE", "ANALYSE") && !(fzKw(src, sig, k+1, "FALSE", "OFF") || k+1 < len(sig) && sig[k+1].Text(src) == "0") {
			return true
		}
	}
	return false
}

// fzWriteAt applies the head pattern to the write keyword at sig[i].
func fzWriteAt(rw testPlanner, src string, sig []sqllex.Token, i int) string {
	head := strings.ToUpper(sig[i].Text(src))
	j := i + 1
	skip := func(words ...string) {
		for {
			switch {
			case fzKw(src, sig, j, words...):
				j++
			case fzKw(src, sig, j, "OR") && (head == "UPDATE" || head == "INSERT") && j+1 < len(sig) && sig[j+1].Kind == sqllex.KindWord:
				j += 2 // SQLite OR REPLACE/IGNORE/…
			default:
				return
			}
		}
	}
	report := func() string {
		return fmt.Sprintf("%s writes the guarded table at byte %d", head, sig[j].Start)
	}
	switch head {
	case "UPDATE":
		skip("LOW_PRIORITY", "IGNORE", "ONLY")
		if fzNameGuarded(src, sig, j, rw) {
			return report()
		}
		return fzMultiUpdate(rw, src, sig, j)
	case "DELETE":
		skip("LOW_PRIORITY", "QUICK", "IGNORE")
		if fzKw(src, sig, j, "FROM") {
			j++
			skip("ONLY")
			if fzNameGuarded(src, sig, j, rw) {
				return report()
			}
			if rw.NumberedParams() {
				// PostgreSQL's DELETE FROM t USING …: t, a table, is the only target.
				return ""
			}
			// DELETE FROM t1, t2 USING …: the tables before USING are the targets.
			return fzDeleteTargets(rw, src, sig, j, "USING")
		}
		// DELETE t1, t2 FROM …: targets before FROM, resolved through aliases.
		return fzDeleteTargets(rw, src, sig, j, "FROM")
	case "INSERT":
		skip("LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE")
		skip("INTO")
	case "REPLACE":
		skip("LOW_PRIORITY", "DELAYED")
		skip("INTO")
	case "MERGE":
		skip("INTO")
		skip("ONLY")
	case "TRUNCATE":
		skip("TABLE")
		skip("ONLY")
	case "COPY":
		if fzNameGuarded(src, sig, j, rw) {
			_, end, _ := fzName(src, sig, j, rw)
			for k := end; k < len(sig); k++ {
				if fzKw(src, sig, k, "FROM") {
					return report()
				}
				if fzKw(src, sig, k, "TO") {
					return ""
				}
			}
		}
		return ""
	case "LOAD":
		for k := j; k+2 < len(sig); k++ {
			if fzKw(src, sig, k, "INTO") && fzKw(src, sig, k+1, "TABLE") && fzNameGuarded(src, sig, k+2, rw) {
				j = k + 2
				return report()
			}
		}
		return ""
	}
	if fzNameGuarded(src, sig, j, rw) {
		return report()
	}
	return ""
}

// fzRefs collects the table references of a MySQL multi-table list sig[from:to]:
// guarded names and the aliases they are given.
func fzRefs(rw testPlanner, src string, sig []sqllex.Token, from, to int) (names map[string]bool) {
	names = map[string]bool{}
	depth := 0
	for k := from; k < to; k++ {
		switch {
		case fzPunct(src, sig[k], "("):
			depth++
			continue
		case fzPunct(src, sig[k], ")"):
			depth--
			continue
		}
		if depth != 0 || !(k == from || fzPunct(src, sig[k-1], ",") || fzKw(src, sig, k-1, "JOIN", "STRAIGHT_JOIN")) {
			continue
		}
		parts, end, ok := fzName(src, sig, k, rw)
		if !ok || !(fzGuarded(parts) || slices.Contains(parts, "\x00undecodable")) {
			continue
		}
		names[strings.ToLower(parts[len(parts)-1])] = true
		a := end
		if fzKw(src, sig, a, "AS") {
			a++
		}
		if n, ok, _ := fzIdent(src, sig[min(a, len(sig)-1)], rw); a < to && ok && !fzKw(src, sig, a, "SET", "ON", "USING", "JOIN", "INNER", "LEFT", "RIGHT", "CROSS", "NATURAL", "STRAIGHT_JOIN", "WHERE", "FROM") {
			names[strings.ToLower(n)] = true
		}
	}
	return names
}

// fzMultiUpdate: UPDATE t JOIN accounts a … SET a.x = …: a SET target qualified with a
// guarded table (or its alias).
func fzMultiUpdate(rw testPlanner, src string, sig []sqllex.Token, from int) string {
	set := from
	depth := 0
	for ; set < len(sig); set++ {
		if fzPunct(src, sig[set], "(") {
			depth++
		} else if fzPunct(src, sig[set], ")") {
			depth--
		} else if depth == 0 && fzKw(src, sig, set, "SET") {
			break
		}
	}
	if set >= len(sig) {
		return ""
	}
	refs := fzRefs(rw, src, sig, from, set)
	if len(refs) == 0 {
		return ""
	}
	target := true
	depth = 0
	for k := set + 1; k < len(sig); k++ {
		switch {
		case fzPunct(src, sig[k], "("):
			depth++
		case fzPunct(src, sig[k], ")"):
			depth--
		case depth == 0 && fzPunct(src, sig[k], ","):
			target = true
		case depth == 0 && fzPunct(src, sig[k], "="):
			target = false
		case depth == 0 && fzKw(src, sig, k, "WHERE", "ORDER", "LIMIT"):
			return ""
		case depth == 0 && target:
			if parts, _, ok := fzName(src, sig, k, rw); ok && len(parts) >= 2 && refs[strings.ToLower(parts[len(parts)-2])] {
				return fmt.Sprintf("a multi-table UPDATE sets a column of the guarded table at byte %d", sig[k].Start)
			}
			target = false
		}
	}
	return ""
}

// fzDeleteTargets: DELETE t1[, t2] FROM refs … or DELETE FROM t1[, t2] USING refs …: a
// target that is a guarded table or the alias of one.
func fzDeleteTargets(rw testPlanner, src string, sig []sqllex.Token, from int, sep string) string {
	end := from
	for end < len(sig) && !fzKw(src, sig, end, sep) {
		end++
	}
	if end >= len(sig) {
		return ""
	}
	refsEnd := len(sig)
	for k := end + 1; k < len(sig); k++ {
		if fzKw(src, sig, k, "WHERE", "ORDER", "LIMIT") {
			refsEnd = k
			break
		}
	}
	refs := fzRefs(rw, src, sig, end+1, refsEnd)
	for k := from; k < end; k++ {
		if k != from && !fzPunct(src, sig[k-1], ",") {
			continue
		}
		parts, _, ok := fzName(src, sig, k, rw)
		if !ok {
			continue
		}
		if fzGuarded(parts) || slices.Contains(parts, "\x00undecodable") {
			return fmt.Sprintf("a multi-table DELETE targets the guarded table at byte %d", sig[k].Start)
		}
		last := strings.ToLower(parts[len(parts)-1])
		if last == "*" || refs[last] {
			return fmt.Sprintf("a multi-table DELETE targets the guarded table's alias at byte %d", sig[k].Start)
		}
	}
	return ""
}
