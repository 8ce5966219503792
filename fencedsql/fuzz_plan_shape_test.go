// Helpers of the fuzz invariants on the shape of a rewritten statement.

package fencedsql

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// fzCheckAssignmentAtTop: in a plan that assigns the token (UPDATE, the fencing UPDATE
// of a DELETE, an upsert), "<tok> = CASE" stands at parenthesis depth 0, i.e. in the
// statement's own SET list and not in a subquery — when the input is balanced.
func fzCheckAssignmentAtTop(t *testing.T, tag string, rw testPlanner, src string, p *plan.Plan) {
	t.Helper()
	fzCheckAssignmentAt(t, tag, rw, src, p, 0)
}

// fzCheckAssignmentAt is fzCheckAssignmentAtTop for an UPDATE nested want parentheses
// deep (PostgreSQL's claim by row locator runs its UPDATE as a WITH query).
func fzCheckAssignmentAt(t *testing.T, tag string, rw testPlanner, src string, p *plan.Plan, want int) {
	t.Helper()
	if !fzBalanced(src, rw) {
		return
	}
	toks, err := sqllex.Lex(p.SQL, rw.Syntax())
	if err != nil {
		return
	}
	sig := sqllex.Significant(toks)
	depth := 0
	for i, tk := range sig {
		switch {
		case fzPunct(p.SQL, tk, "("):
			depth++
		case fzPunct(p.SQL, tk, ")"):
			depth--
		case depth == want && tk.Kind == sqllex.KindQuotedIdent && tk.Text(p.SQL) == p.Guard.QTok &&
			i+2 < len(sig) && fzPunct(p.SQL, sig[i+1], "=") && sqllex.IsKeyword(p.SQL, sig[i+2], "CASE"):
			return
		}
	}
	t.Errorf("%s: %q has no %s = CASE … assignment at depth %d", tag, p.SQL, p.Guard.QTok, want)
}

// fzHasUpsertUpdate reports an INSERT with ON CONFLICT … DO UPDATE or ON DUPLICATE KEY UPDATE.
func fzHasUpsertUpdate(rw testPlanner, src string) bool {
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		return false
	}
	sig := sqllex.Significant(toks)
	depth, conflict := 0, false
	for i, tk := range sig {
		switch {
		case fzPunct(src, tk, "("):
			depth++
		case fzPunct(src, tk, ")"):
			depth--
		case depth != 0:
		case fzKw(src, sig, i, "CONFLICT") && fzKw(src, sig, i-1, "ON"):
			conflict = true
		case fzKw(src, sig, i, "UPDATE") && i >= 3 && fzKw(src, sig, i-1, "KEY") && fzKw(src, sig, i-2, "DUPLICATE") && fzKw(src, sig, i-3, "ON"):
			return true
		case fzKw(src, sig, i, "UPDATE") && conflict && fzKw(src, sig, i-1, "DO"):
			return true
		}
	}
	return false
}

// fzBalanced reports whether the input's parentheses are balanced.
func fzBalanced(src string, rw testPlanner) bool {
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		return false
	}
	depth := 0
	for _, tk := range toks {
		switch {
		case fzPunct(src, tk, "("):
			depth++
		case fzPunct(src, tk, ")"):
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// fzSubsequence reports whether every byte of a appears in b, in order.
func fzSubsequence(a, b string) bool {
	j := 0
	for i := 0; i < len(b) && j < len(a); i++ {
		if b[i] == a[j] {
			j++
		}
	}
	return j == len(a)
}

// fzWithout returns src without the byte ranges (ascending, disjoint).
func fzWithout(src string, ranges [][2]int) string {
	var sb strings.Builder
	last := 0
	for _, r := range ranges {
		sb.WriteString(src[last:r[0]])
		last = r[1]
		// As the builder does: what is left on both sides must not glue into one token.
		if out := sb.String(); len(out) > 0 && last < len(src) && plan.Glues(out[len(out)-1], src[last]) {
			sb.WriteByte(' ')
		}
	}
	sb.WriteString(src[last:])
	return sb.String()
}

// fzCountParams counts the placeholders of src inside the byte ranges.
func fzCountParams(src string, ranges [][2]int, rw testPlanner) int {
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		return 0
	}
	n := 0
	for _, tk := range toks {
		for _, r := range ranges {
			if tk.Kind == sqllex.KindParam && tk.Start >= r[0] && tk.End <= r[1] {
				n++
			}
		}
	}
	return n
}

// fzSkipOnly returns the sig index of the table name after UPDATE [ONLY].
func fzSkipOnly(src string, sig []sqllex.Token) int {
	if len(sig) > 2 && sqllex.IsKeyword(src, sig[1], "ONLY") {
		return 2
	}
	return 1
}
