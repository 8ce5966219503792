package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// MySQL/MariaDB optimizer hints (/*+ … */) are never statement text: MySQL hands their
// content to its hint parser (right after SELECT, INSERT, REPLACE, UPDATE or DELETE; a
// comment anywhere else), MariaDB reads them as comments. The lexer reports them as
// KindExecComment, since they open like one; the planner treats them as blanks: they
// are left out of the significant tokens (significant), a write or claim that carries
// one is fenced as without it, and the rewritten text keeps it where the caller wrote
// it. One hint changes what the statement does: MySQL 8's SET_VAR sets a session
// variable for the statement (SET_VAR(sql_mode='') would turn the fence's NOT NULL
// violation into a warning and store a value): a statement that names a guarded table
// and carries it is refused (checkHints).

// isHint reports whether t, a token of src, is an optimizer hint.
func isHint(src string, t sqllex.Token) bool {
	return t.Kind == sqllex.KindExecComment && strings.HasPrefix(src[t.Start:t.End], "/*+")
}

// significant returns the tokens of src that are neither blanks, comments nor
// optimizer hints, in a newly allocated slice: what the planner reads.
func significant(src string, toks []sqllex.Token) []sqllex.Token {
	out := make([]sqllex.Token, 0, len(toks))
	for _, t := range toks {
		if t.Kind != sqllex.KindSpace && t.Kind != sqllex.KindComment && !isHint(src, t) {
			out = append(out, t)
		}
	}
	return out
}

// checkHints refuses a statement that may name a guarded table and carries an
// optimizer hint that sets a session variable for it (SET_VAR).
func (p *parser) checkHints() error {
	for _, t := range p.all {
		if isHint(p.src, t) && ContainsFold(p.text(t), "set_var") && p.mayNameGuard() {
			return unsupported(p.firstGuard(), "an optimizer hint SET_VAR (/*+ SET_VAR(…) */) in a statement that names a guarded table: it sets a session variable for the statement (sql_mode among them, which can turn the fencing error into a warning); set it on a plain connection, or leave the hint out")
		}
	}
	return nil
}
