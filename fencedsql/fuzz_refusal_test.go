// The fuzz no-spurious-refusal oracle: when an input must not be refused, or may be refused on sight.

package fencedsql

import (
	"slices"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// fzNoRefusalExpected returns why src must not be refused, or "" when a refusal is
// legitimate: the input does not lex, names a guarded table in an identifier (any part
// of a name, unqualified, the way the rewriter's mentionsGuard matches), or holds a
// construct the rewriter documents as refused on sight (an executable comment naming a
// guarded table or a write, a U&"…" identifier, PREPARE/DO, a parenthesised write).
func fzNoRefusalExpected(rw testPlanner, src string) string {
	if fzProtected(rw, src) || fzReadingChangeJudged(rw, src) {
		return ""
	}
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		return ""
	}
	sig := sqllex.Significant(toks)
	for _, tk := range sig {
		if tk.Kind == sqllex.KindExecComment {
			return ""
		}
		if tk.Kind == sqllex.KindQuotedIdent {
			if _, _, ok := sqllex.Ident(src, tk); !ok {
				return "" // U&"…", or an invalid empty "" that the server rejects anyway
			}
		}
		n, ok, _ := fzIdent(src, tk, rw)
		if ok && (strings.EqualFold(n, "accounts") || strings.EqualFold(n, "orders")) {
			return ""
		}
		// PostgreSQL truncates an identifier to 63 bytes, never inside a character:
		// the rewriter keys a longer one as the server would cut it (Planner.Key), so
		// "accounts" followed by bytes that are no whole character may name the guard.
		if ok && rw.Syntax() == sqllex.Postgres && len(n) > 63 {
			return ""
		}
	}
	first := 0
	for first < len(sig)-1 && fzPunct(src, sig[first], "(") {
		first++
	}
	if len(sig) > 0 && fzKw(src, sig, first, "PREPARE", "DO") {
		return ""
	}
	if fzJudgedByHead(src, sig, rw.Syntax() == sqllex.Postgres) {
		return ""
	}
	if first > 0 && !fzKw(src, sig, first, "SELECT", "VALUES", "TABLE", "WITH") {
		return ""
	}
	return "no identifier names a guarded table"
}

// fzProtected reports whether the text may be refused for what it does to the guards
// or the protected settings (protect.go), whatever it names: a guard object's prefix,
// pg_settings, set_config, setval/nextval, a function that runs SQL text or a protected setting's name
// anywhere (escapes included:
// a backslash or U& may spell one), a MySQL executable comment, or text that does not
// lex and may create a routine.
func fzProtected(rw testPlanner, src string) bool {
	for _, w := range []string{"fencedsql_", "pg_settings", "set_config", "session_replication_role",
		"synchronous_commit", "sql_log_bin", "skip_replication", "writable_schema", `\`, "u&",
		"query_to_xml", "ts_stat", "ts_rewrite", "dblink", "server_id", "gtid_", "journal_mode", "synchronous",
		"setval", "nextval", "sql_select_limit", "max_join_size", "sql_big_selects"} {
		if plan.ContainsFold(src, w) {
			return true
		}
	}
	// A system catalog a write may reach (protect_reach.go).
	if rw.Syntax() == sqllex.Postgres && (plan.ContainsFold(src, "pg_") || plan.ContainsFold(src, "information_schema")) {
		return true
	}
	if rw.Syntax() == sqllex.MySQL && (plan.ContainsFold(src, "mysql") || plan.ContainsFold(src, "_schema") || plan.ContainsFold(src, "sys")) {
		return true
	}
	if rw.Syntax() == sqllex.MySQL && plan.HasFoldableGuardPrefix(src) {
		return true // a routine name MariaDB folds to the reserved prefix
	}
	if rw.Syntax() == sqllex.MySQL && (strings.Contains(src, "@'") || strings.Contains(src, `@"`)) {
		return true // a user variable named by a string: escapes may spell the DELETE's mark
	}
	for _, w := range []string{"heap_force_kill", "heap_force_freeze"} {
		if plan.ContainsFold(src, w) {
			return true // pg_surgery (protectSurgery)
		}
	}
	if rw.Syntax() == sqllex.Postgres && plan.ContainsFold(src, "uescape") {
		return true // a Unicode escape of its own (protectUnicodeEscapes)
	}
	if rw.Syntax() == sqllex.MySQL {
		for _, w := range []string{"x'", "b'", "0x", "0b", "_utf", "_ucs"} {
			if plan.ContainsFold(src, w) {
				return true // a hexadecimal, bit or wide-charset literal (literalText)
			}
		}
	}
	if _, err := sqllex.Lex(src, rw.Syntax()); err != nil && (plan.ContainsFold(src, "create") || plan.ContainsFold(src, "alter")) {
		for _, k := range []string{"function", "procedure", "trigger", "rule", "event", "package"} {
			if plan.ContainsFold(src, k) {
				return true // may be routine DDL the lexer cannot read: refused (routine.go)
			}
		}
	}
	return rw.Syntax().ExecComments && strings.Contains(src, "/*")
}

// fzJudgedByHead reports whether some statement of the input starts with a keyword that
// the rewriter judges whatever the statement names, on a pool with guarded tables:
// transaction control, dynamic SQL, SET and LOCK, DDL (by what its bodies name), and
// the statements that reach a guarded table without naming it (TRUNCATE … CASCADE,
// COPY … PROGRAM, BINLOG, EXPLAIN ANALYZE EXECUTE).
func fzJudgedByHead(src string, sig []sqllex.Token, postgres bool) bool {
	for i := range sig {
		at := i
		for at < len(sig) && fzPunct(src, sig[at], "(") {
			at++
		}
		if i == 0 || fzPunct(src, sig[i-1], ";") {
			if fzKw(src, sig, at, fzJudgedHeads...) {
				return true
			}
			// On PostgreSQL a statement that starts with no statement keyword (a pgx
			// prepared-statement name) is refused (protect_reach.go: protectHead).
			// Parentheses with nothing after them are judged by the last one.
			if postgres && (at >= len(sig) || sig[at].Kind != sqllex.KindWord || !plan.IsStatementHead(src[sig[at].Start:sig[at].End])) {
				return true
			}
		}
	}
	return false
}

// fzReadingChangeJudged reports a MySQL/MariaDB text of several statements that holds
// SET or EXECUTE (as a word anywhere, or in an executable comment): the multi-statement
// rule (plan/multistatement.go) may refuse it whatever it names, when such a statement
// may change how the server reads the statements after it.
func fzReadingChangeJudged(rw testPlanner, src string) bool {
	if rw.Syntax() != sqllex.MySQL || !strings.Contains(strings.TrimRight(src, " \t\n\r;"), ";") {
		return false
	}
	return plan.ContainsWord(src, "set") || plan.ContainsWord(src, "execute") || strings.Contains(src, "/*")
}

// fzJudgedHeads are the head keywords fzJudgedByHead names.
var fzJudgedHeads = []string{"BEGIN", "START", "COMMIT", "ROLLBACK",
	"END", "ABORT", "XA", "EXECUTE", "EXEC", "PREPARE", "DO", "CALL", "SET", "LOCK", "CREATE", "ALTER",
	"DROP", "RENAME", "COMMENT", "GRANT", "REVOKE", "REPAIR", "ATTACH", "DETACH", "REFRESH", "SECURITY",
	"IMPORT", "REASSIGN", "TRUNCATE", "COPY", "BINLOG", "EXPLAIN", "ANALYZE", "USE", "INSTALL",
	"UNINSTALL", "LOAD"}

// fzUnreadableJudged reports a text the lexer cannot read that the planner looks at
// anyway — it holds ';', starts with a comment, or its first word is a judged head —
// which is refused (rewriter.go: a text it cannot read is not passed on a guess).
func fzUnreadableJudged(rw testPlanner, src string) bool {
	if _, err := sqllex.Lex(src, rw.Syntax()); err == nil {
		return false
	}
	if strings.Contains(src, ";") {
		return true
	}
	rest := strings.TrimLeft(src, " \t\n\r\f\v(")
	if strings.HasPrefix(rest, "--") || strings.HasPrefix(rest, "/*") || rw.Syntax().HashComments && strings.HasPrefix(rest, "#") {
		return true
	}
	end := 0
	for end < len(rest) && (rest[end]|0x20 >= 'a' && rest[end]|0x20 <= 'z' || rest[end] == '_' || end > 0 && (rest[end] >= '0' && rest[end] <= '9' || rest[end] == '$')) {
		end++
	}
	if rw.Syntax() == sqllex.Postgres && (end == 0 && rest != "" || end > 0 && !plan.IsStatementHead(rest[:end])) {
		return true // no statement keyword first: judged on PostgreSQL (protectHead)
	}
	return slices.ContainsFunc(fzJudgedHeads, func(h string) bool { return strings.EqualFold(h, rest[:end]) })
}
