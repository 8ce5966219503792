// The table of rewrite cases, the fencing items they expect, and TestRewrite, which plans and checks them.

package fencedsql

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Argument references used in the expectations below.
const (
	TOK = plan.ArgToken   // the transaction's fencing token
	VER = plan.ArgVersion // the ExpectVersion value
)

func refs(r ...plan.ArgRef) []plan.ArgRef { return r }

// The fencing SET items, spelled out once per dialect.
func pgItems(tok int) string {
	return fmt.Sprintf(`"version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $%d THEN $%d::bigint ELSE NULL END`, tok, tok)
}

func pgItemsV(tok, ver int) string {
	return fmt.Sprintf(`"version" = CASE WHEN "version" = $%[2]d THEN "version" + 1 WHEN "fence_token" <= $%[1]d THEN NULL ELSE "version" END, "fence_token" = CASE WHEN "fence_token" <= $%[1]d THEN $%[1]d::bigint ELSE NULL END`, tok, ver)
}

const (
	myItems    = "`version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END"
	myItemsV   = "`version` = CASE WHEN `version` = ? THEN `version` + 1 WHEN `fence_token` <= ? THEN NULL ELSE `version` END, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END"
	liteItems  = `"version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END`
	liteItemsV = `"version" = CASE WHEN "version" = ? THEN "version" + 1 WHEN "fence_token" <= ? THEN NULL ELSE "version" END, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END`
)

type rewriteCase struct {
	name    string
	d       testDialect
	opts    []Option // nil: Guard("accounts")
	ver     bool     // the ExpectVersion variant
	in      string
	kind    plan.Kind
	out     string
	args    []plan.ArgRef
	nUser   int
	preSQL  string // DELETE: the fencing UPDATE
	preArgs []plan.ArgRef
}

// rewriteCases are the statements TestRewrite plans and checks, every section in order.
var rewriteCases = slices.Concat(rewriteUpdateCases, rewriteStrictCases, rewriteLiteralCases, rewriteVersionCases, rewriteDeleteCases, rewriteInsertCases, rewriteFromWithCases, rewriteMultiConflictCases, rewriteMappedCases)

func TestRewrite(t *testing.T) {
	for _, c := range rewriteCases {
		t.Run(c.d.name+"/"+c.name, func(t *testing.T) {
			rw := newTestRewriter(t, c.d, c.opts...)
			p, err := rw.Rewrite(c.in, c.ver)
			if err != nil {
				t.Fatalf("rewrite(%q): %v", c.in, err)
			}
			if p.Kind != c.kind {
				t.Fatalf("kind = %v, want %v", p.Kind, c.kind)
			}
			if p.SQL != c.out {
				t.Errorf("sql:\n got  %s\n want %s", p.SQL, c.out)
			}
			if !slices.Equal(p.Args, c.args) {
				t.Errorf("args = %v, want %v", p.Args, c.args)
			}
			if p.NUser != c.nUser {
				t.Errorf("nUser = %d, want %d", p.NUser, c.nUser)
			}
			if p.Guard == nil {
				t.Errorf("guard is nil")
			}
			checkPlaceholders(t, rw, p)
			if c.kind != plan.KindDelete {
				if p.Pre != nil {
					t.Errorf("unexpected pre plan %q", p.Pre.SQL)
				}
				return
			}
			if p.Pre == nil {
				t.Fatalf("DELETE without a pre plan")
			}
			if p.Pre.Kind != plan.KindUpdate {
				t.Errorf("pre kind = %v, want UPDATE", p.Pre.Kind)
			}
			if p.Pre.SQL != c.preSQL {
				t.Errorf("pre sql:\n got  %s\n want %s", p.Pre.SQL, c.preSQL)
			}
			if !slices.Equal(p.Pre.Args, c.preArgs) {
				t.Errorf("pre args = %v, want %v", p.Pre.Args, c.preArgs)
			}
			if p.Pre.NUser != c.nUser {
				t.Errorf("pre nUser = %d, want %d", p.Pre.NUser, c.nUser)
			}
			checkPlaceholders(t, rw, p.Pre)
		})
	}
}

// checkPlaceholders verifies a plan's argument list against the placeholders of its SQL:
// one ref per ? (in order) for positional dialects, $1..$len(args) for numbered ones;
// every user argument is used.
func checkPlaceholders(t *testing.T, rw testPlanner, p *plan.Plan) {
	t.Helper()
	toks, err := sqllex.Lex(p.SQL, rw.Syntax())
	if err != nil {
		t.Fatalf("rewritten SQL does not lex: %v", err)
	}
	var params []sqllex.Token
	for _, tk := range toks {
		if tk.Kind == sqllex.KindParam {
			params = append(params, tk)
		}
	}
	used := map[plan.ArgRef]bool{}
	for _, r := range p.Args {
		used[r] = true
		if r >= 0 && int(r) >= p.NUser {
			t.Errorf("arg ref %d out of range (nUser %d)", r, p.NUser)
		}
	}
	if rw.NumberedParams() {
		maxN := 0
		for _, tk := range params {
			maxN = max(maxN, tk.Num)
		}
		if maxN != len(p.Args) {
			t.Errorf("highest $n is %d, but %d args", maxN, len(p.Args))
		}
		// The user's arguments come first, in order (all of them unless items that
		// assigned a fencing column were dropped with theirs).
		for i := range p.Args {
			if p.Args[i] < 0 {
				break
			}
			if (len(p.Dropped) == 0 && p.Args[i] != plan.ArgRef(i)) || (i > 0 && p.Args[i] <= p.Args[i-1]) {
				t.Errorf("numbered args must start with the user's in order: %v", p.Args)
				break
			}
		}
	} else if len(params) != len(p.Args) {
		t.Errorf("%d ? placeholders but %d args", len(params), len(p.Args))
	}
	if !used[plan.ArgToken] {
		t.Errorf("the token is not an argument: %v", p.Args)
	}
}
