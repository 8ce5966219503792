// The fuzz invariants on one plan: refusals, pass-through, the rewritten statements and the DELETE claim.

package fencedsql

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

func (ft *fzTarget) checkOne(t *testing.T, tag string, rw testPlanner, src string, versioned bool, p *plan.Plan, err error) {
	t.Helper()
	if err != nil {
		var ue *UnsupportedError
		if !errors.Is(err, ErrUnsupported) || !errors.As(err, &ue) {
			t.Fatalf("%s: error %v is not an *UnsupportedError", tag, err)
		}
		if last := strings.ToLower(ue.Table[strings.LastIndex(ue.Table, ".")+1:]); ue.Table != "" && last != "accounts" && last != "orders" {
			t.Errorf("%s: UnsupportedError.Table = %q names no guarded table", tag, ue.Table)
		}
		if !fzMayMention(rw, src) && !fzJudgedByHead(src, fzSig(src, rw), rw.Syntax() == sqllex.Postgres) && !fzProtected(rw, src) && !fzUnreadableJudged(rw, src) && !fzReadingChangeJudged(rw, src) {
			t.Errorf("%s: refused (%v) although the text names no guarded table", tag, err)
		}
		if why := fzNoRefusalExpected(rw, src); why != "" {
			t.Errorf("%s: refused (%v) although %s", tag, err, why)
		}
		return
	}
	if p == nil {
		t.Fatalf("%s: nil plan and nil error", tag)
	}
	if p.Kind == plan.KindPass {
		if p.Guard != nil || p.Pre != nil {
			t.Errorf("%s: pass-through plan with a guard or pre plan", tag)
		}
		if why := fzWritesGuard(rw, src); why != "" {
			t.Errorf("%s: BYPASS: passed through unfenced, but %s", tag, why)
		}
		return
	}
	if !fzMayMention(rw, src) {
		t.Errorf("%s: rewritten although the text names no guarded table", tag)
	}
	if p.Kind == plan.KindClaim {
		ft.checkClaim(t, tag, rw, src, versioned, p)
		return
	}
	if p.Guard == nil {
		t.Fatalf("%s: rewritten plan without a guard", tag)
	}
	if !plan.ContainsFold(src, strings.ToLower(p.Guard.Name)) {
		t.Errorf("%s: plan guards %s, which the input does not name", tag, p.Guard)
	}
	switch p.Kind {
	case plan.KindUpdate, plan.KindInsert:
		if p.Pre != nil {
			t.Errorf("%s: %v plan with a pre plan", tag, p.Kind)
		}
	case plan.KindDelete:
	default:
		t.Fatalf("%s: unknown plan kind %v", tag, p.Kind)
	}
	ft.checkPlan(t, tag, rw, src, versioned, p, true)
	switch {
	case p.Stamped != nil:
		// An ON DUPLICATE KEY UPDATE of self-assignments: its conflict branch writes
		// nothing; the form sent where the guard is installed fences it.
		fzCheckAssignmentAtTop(t, tag+" [stamped]", rw, src, p.Stamped)
	case p.Kind == plan.KindUpdate || (p.Kind == plan.KindInsert && fzHasUpsertUpdate(rw, src)):
		fzCheckAssignmentAtTop(t, tag, rw, src, p)
	}
	if p.Kind != plan.KindDelete {
		return
	}
	pre := p.Pre
	if pre == nil {
		t.Fatalf("%s: DELETE plan without the fencing UPDATE", tag)
	}
	if pre.Kind != plan.KindUpdate || pre.Guard != p.Guard || pre.NUser != p.NUser || pre.Pre != nil {
		t.Errorf("%s: pre plan kind %v guard %v nUser %d, want UPDATE of %v with nUser %d", tag, pre.Kind, pre.Guard, pre.NUser, p.Guard, p.NUser)
	}
	ft.checkPlan(t, tag+" [pre]", rw, src, versioned, pre, false)
	fzCheckAssignmentAtTop(t, tag+" [pre]", rw, src, pre)
	// The fencing UPDATE targets the DELETE's table: UPDATE <name> ….
	toks, lexErr := sqllex.Lex(pre.SQL, rw.Syntax())
	if lexErr == nil {
		sig := sqllex.Significant(toks)
		if len(sig) < 2 || !sqllex.IsKeyword(pre.SQL, sig[0], "UPDATE") {
			t.Errorf("%s: pre plan %q is not an UPDATE", tag, pre.SQL)
		} else if parts, _, ok := fzName(pre.SQL, sig, fzSkipOnly(pre.SQL, sig), rw); !ok || !strings.EqualFold(parts[len(parts)-1], p.Guard.Name) {
			t.Errorf("%s: pre plan %q does not update %s", tag, pre.SQL, p.Guard)
		}
	}
	// The DELETE keeps only rows carrying the token: "<tok> = <param>" at depth 0.
	if toks, err := sqllex.Lex(p.SQL, rw.Syntax()); err == nil && fzBalanced(src, rw) {
		sig := sqllex.Significant(toks)
		found := false
		depth := 0
		for i, tk := range sig {
			switch {
			case fzPunct(p.SQL, tk, "("):
				depth++
			case fzPunct(p.SQL, tk, ")"):
				depth--
			case depth == 0 && tk.Kind == sqllex.KindQuotedIdent && tk.Text(p.SQL) == p.Guard.QTok &&
				i+2 < len(sig) && fzPunct(p.SQL, sig[i+1], "=") && sig[i+2].Kind == sqllex.KindParam &&
				i > 0 && (sqllex.IsKeyword(p.SQL, sig[i-1], "AND") || sqllex.IsKeyword(p.SQL, sig[i-1], "WHERE")):
				found = true
			}
		}
		if !found {
			t.Errorf("%s: DELETE %q lacks a top-level %s = <token> condition", tag, p.SQL, p.Guard.QTok)
		}
	}
}

// checkPlan checks invariant 5 on one plan; main is false for a DELETE's pre plan,
// whose text is built from pieces of the input (so only its user arguments are
// checked to be a subsequence, in order).
func (ft *fzTarget) checkPlan(t *testing.T, tag string, rw testPlanner, src string, versioned bool, p *plan.Plan, main bool) {
	t.Helper()
	toks, err := sqllex.Lex(p.SQL, rw.Syntax())
	if err != nil {
		t.Errorf("%s: rewritten SQL %q does not lex: %v", tag, p.SQL, err)
		return
	}
	userToks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		t.Errorf("%s: rewritten although the input does not lex: %v", tag, err)
		return
	}
	// nUser is the input's placeholder count (?) or highest $n.
	wantUser := 0
	for _, tk := range userToks {
		if tk.Kind == sqllex.KindParam {
			if rw.NumberedParams() {
				wantUser = max(wantUser, tk.Num)
			} else {
				wantUser++
			}
		}
	}
	if p.NUser != wantUser {
		t.Errorf("%s: nUser = %d, the input has %d", tag, p.NUser, wantUser)
	}
	var params []sqllex.Token
	tokIdent := false
	for _, tk := range toks {
		switch tk.Kind {
		case sqllex.KindParam:
			params = append(params, tk)
		case sqllex.KindQuotedIdent:
			tokIdent = tokIdent || tk.Text(p.SQL) == p.Guard.QTok
		}
	}
	if !tokIdent {
		t.Errorf("%s: %q does not contain the token column %s as an identifier", tag, p.SQL, p.Guard.QTok)
	}
	usesVer := slices.Contains(p.Args, plan.ArgVersion)
	if !slices.Contains(p.Args, plan.ArgToken) {
		t.Errorf("%s: the token is not an argument of %q: %v", tag, p.SQL, p.Args)
	}
	if usesVer && !versioned {
		t.Errorf("%s: a plain plan binds the version: %v", tag, p.Args)
	}
	if versioned && p.Kind == plan.KindUpdate && !usesVer {
		t.Errorf("%s: a versioned UPDATE does not bind the version: %v", tag, p.Args)
	}
	// Items that assigned a fencing column are left out, with their placeholders.
	kept := src
	if len(p.Dropped) > 0 {
		if !plan.ContainsFold(src, strings.ToLower(p.Guard.TokenCol)) && !plan.ContainsFold(src, strings.ToLower(p.Guard.VerCol)) {
			t.Errorf("%s: dropped %v although the input names no fencing column", tag, p.Dropped)
		}
		kept = fzWithout(src, p.Dropped)
		keptToks, err := sqllex.Lex(kept, rw.Syntax())
		if err != nil {
			// The text without the dropped items does not lex (a malformed input whose
			// items glue together once one is cut out): the token-level checks below,
			// which read the kept text's tokens, have nothing to compare.
			return
		}
		userToks = keptToks
	}
	keptUser := map[int]bool{}
	for _, tk := range userToks {
		if tk.Kind == sqllex.KindParam {
			keptUser[tk.Num] = true
		}
	}
	var user []plan.ArgRef
	for _, r := range p.Args {
		switch {
		case r == plan.ArgToken || r == plan.ArgVersion:
		case r < 0 || int(r) >= p.NUser:
			t.Errorf("%s: argument ref %d out of range (nUser %d)", tag, r, p.NUser)
		default:
			user = append(user, r)
		}
	}
	if rw.NumberedParams() {
		maxN := 0
		for _, tk := range params {
			maxN = max(maxN, tk.Num)
		}
		nKept := p.NUser
		if len(p.Dropped) > 0 {
			nKept = len(keptUser)
		}
		want := nKept + 1
		if usesVer {
			want++
		}
		if main && (maxN != want || len(p.Args) != want) {
			t.Errorf("%s: highest $n is %d and %d args, want %d (nUser %d, version %v)", tag, maxN, len(p.Args), want, p.NUser, usesVer)
		}
		for i := 1; i < len(user); i++ {
			if user[i] <= user[i-1] {
				t.Errorf("%s: numbered args must start with the user's in order: %v", tag, p.Args)
				break
			}
		}
	} else {
		if len(params) != len(p.Args) {
			t.Errorf("%s: %d ? placeholders in %q but %d args %v", tag, len(params), p.SQL, len(p.Args), p.Args)
		}
		for _, tk := range params {
			if tk.Text(p.SQL) != "?" {
				t.Errorf("%s: placeholder %q in positional output", tag, tk.Text(p.SQL))
			}
		}
		// User arguments appear once each, in order (all of them in the main statement).
		for i := 1; i < len(user); i++ {
			if user[i] <= user[i-1] {
				t.Errorf("%s: user arguments out of order: %v", tag, p.Args)
				break
			}
		}
		if main && len(user) != p.NUser-fzCountParams(src, p.Dropped, rw) {
			t.Errorf("%s: %d of %d user arguments bound: %v", tag, len(user), p.NUser, p.Args)
		}
	}
	out := p.SQL
	if len(p.Dropped) > 0 && rw.NumberedParams() { // the kept placeholders were renumbered
		kept, out = fzDollarRE.ReplaceAllLiteralString(kept, "$9"), fzDollarRE.ReplaceAllLiteralString(out, "$9")
		if keptToks, err := sqllex.Lex(kept, rw.Syntax()); err == nil {
			userToks = keptToks
		}
	}
	if main && !fzSubsequence(kept, out) {
		t.Errorf("%s: the input is not a subsequence of the output %q", tag, p.SQL)
	}
	// Token level: the input's significant tokens survive as tokens of the output (the
	// inserted text neither merges with nor splits a neighbour: "END" + "WHERE" must
	// not become "ENDWHERE").
	if main {
		outSrc, outToks := p.SQL, toks
		if out != p.SQL { // placeholders normalised like the kept input
			if ot, err := sqllex.Lex(out, rw.Syntax()); err == nil {
				outSrc, outToks = out, ot
			}
		}
		in, outSig := sqllex.Significant(userToks), sqllex.Significant(outToks)
		j := 0
		for _, tk := range outSig {
			if j < len(in) && tk.Kind == in[j].Kind && (tk.Text(outSrc) == in[j].Text(kept) || (len(p.Dropped) > 0 && tk.Kind == sqllex.KindParam)) {
				j++
			}
		}
		if j < len(in) {
			t.Errorf("%s: input token %q at byte %d is not a token of the output %q", tag, in[j].Text(kept), in[j].Start, p.SQL)
		}
	}
}

// checkWrapper runs src through the wrapped connection (invariant 8).
// checkClaim: a locking read keeps the caller's text and arguments; its claim is an
// UPDATE of the guarded table satisfying invariant 5 (on the parts it copies), or the
// claim is refused with an *UnsupportedError.
func (ft *fzTarget) checkClaim(t *testing.T, tag string, rw testPlanner, src string, versioned bool, p *plan.Plan) {
	t.Helper()
	if p.SQL != src {
		t.Errorf("%s: a claimed read changed the caller's text to %q", tag, p.SQL)
	}
	if p.ClaimErr != nil {
		if !errors.Is(p.ClaimErr, ErrUnsupported) {
			t.Errorf("%s: claim refusal %v is not ErrUnsupported", tag, p.ClaimErr)
		}
		return
	}
	if p.Pre == nil || p.Guard == nil || p.Pre.Guard != p.Guard || p.Pre.Kind != plan.KindUpdate {
		t.Fatalf("%s: claim without a fencing UPDATE of its table", tag)
	}
	ft.checkPlan(t, tag+" [claim]", rw, src, false, p.Pre, false)
	if p.ClaimLocator {
		// PostgreSQL's claim by row locator: the UPDATE is the WITH query
		// fencedsql_claimed, after the locked rows' query.
		fzCheckAssignmentAt(t, tag+" [claim]", rw, src, p.Pre, 1)
		if !strings.Contains(p.Pre.SQL, "fencedsql_locked AS (SELECT ARRAY(SELECT ctid FROM ") || !strings.Contains(p.Pre.SQL, "fencedsql_claimed AS (UPDATE ") {
			t.Errorf("%s: claim by row locator %q is not the locked rows' query and an UPDATE", tag, p.Pre.SQL)
		}
		return
	}
	fzCheckAssignmentAtTop(t, tag+" [claim]", rw, src, p.Pre)
	if toks, err := sqllex.Lex(p.Pre.SQL, rw.Syntax()); err == nil {
		sig := sqllex.Significant(toks)
		if len(sig) < 2 || !sqllex.IsKeyword(p.Pre.SQL, sig[0], "UPDATE") {
			t.Errorf("%s: claim %q is not an UPDATE", tag, p.Pre.SQL)
		}
	}
}

var fzDollarRE = regexp.MustCompile(`\$[0-9]+`)
