package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// FuzzPlan checks the planner's contract on any text, for every dialect, strict or
// not, with and without ExpectVersion (no database: the planner sends nothing):
//
//   - Rewrite never panics, and answers the same text the same way twice;
//   - a refusal (and a claim's deferred refusal) is a *Refusal with a reason;
//   - a plan that is not a pass-through names its guarded table; an UPDATE or INSERT
//     binds the token, and a DELETE or a claimed read runs a fencing UPDATE first
//     that binds it (a claim that cannot be made carries its refusal instead);
//   - every argument a plan draws from the caller's is one the caller's text has.
//
// The end-to-end oracle of what each statement means lives in package fencedsql's
// FuzzRewrite targets; this one holds the planner to its own contract.
func FuzzPlan(f *testing.F) {
	for _, s := range []string{
		"UPDATE accounts SET balance = balance - $1 WHERE id = $2",
		"UPDATE accounts SET balance = ? WHERE id = ?",
		"INSERT INTO accounts (id, balance) VALUES (?, ?), (?, ?)",
		"INSERT INTO shop.orders (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET id = excluded.id",
		"DELETE FROM accounts WHERE id = ?",
		"DELETE FROM accounts WHERE id = $1 RETURNING id, balance",
		"DELETE FROM accounts WHERE version = ? ORDER BY id LIMIT 1 RETURNING *;",
		"SELECT * FROM accounts WHERE id = $1 FOR UPDATE",
		"SELECT * FROM accounts WHERE id = $1 FOR UPDATE UNION ALL SELECT 2", // rt65a F4
		"SELECT * FROM accounts WHERE id = ? FOR UPDATE OF accounts NOWAIT garbage",
		"SELECT 1; DELETE FROM accounts",
		"WITH x AS (DELETE FROM accounts RETURNING *) SELECT * FROM x",
		"/*!50000 UPDATE accounts SET a = 1 */",
		"DROP FUNCTION fencedsql_guard_accounts() CASCADE",
		"SET session_replication_role = replica",
		"SELECT id FROM other WHERE x = 'UPDATE accounts'",
		"DELETE FROM ACCounts INDEXED --#0",
		"UPDATE accounts SET a = 1--\n, b = 2",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	planners := map[string]*Planner{}
	for _, d := range []testDialect{pgTest, mysqlTest, sqliteTest} {
		for _, strict := range []bool{false, true} {
			planners[fmt.Sprintf("%s/strict=%v", d.name, strict)] = newTestRewriter(f, d, Guard("accounts"), Guard("shop.orders"), WithStrict(strict))
		}
		planners[d.name+"/delete-fence"] = newTestRewriter(f, d, Guard("accounts"), Guard("shop.orders"), WithDeleteFence())
		planners[d.name+"/delete-fence-cond"] = newTestRewriter(f, d, Guard("accounts"), Guard("shop.orders"), WithDeleteFenceCond())
	}
	f.Fuzz(func(t *testing.T, src string, versioned bool) {
		for name, rw := range planners {
			p, err := rw.Rewrite(src, versioned)
			p2, err2 := rw.Rewrite(src, versioned)
			if (err == nil) != (err2 == nil) || (p == nil) != (p2 == nil) || p != nil && (p.SQL != p2.SQL || !slices.Equal(p.Args, p2.Args)) {
				t.Fatalf("%s: %q planned twice differently: %v %v / %v %v", name, src, p, err, p2, err2)
			}
			if err != nil {
				var r *Refusal
				if !isRefusal(err) || p != nil {
					t.Fatalf("%s: %q: error %v (%T) with plan %v, want a *Refusal and no plan", name, src, err, err, p)
				}
				if asRefusal(err, &r); r.Reason == "" {
					t.Fatalf("%s: %q: refusal without a reason", name, src)
				}
				continue
			}
			checkPlanContract(t, name, src, p)
			checkNoNewComment(t, name, src, rw.syn, p)
		}
	})
}

// checkNoNewComment: no text a plan runs holds a comment the caller's text does not
// (byte for byte), apart from the builder's empty separator — text the rewrite put side
// by side never opens a comment that swallows the fencing it inserted.
func checkNoNewComment(t *testing.T, name, src string, syn sqllex.Syntax, p *Plan) {
	t.Helper()
	srcToks, err := sqllex.Lex(src, syn)
	if err != nil {
		return
	}
	have := map[string]bool{"/**/": true}
	for _, tok := range srcToks {
		if tok.Kind == sqllex.KindComment {
			have[strings.TrimRight(tok.Text(src), "\r\n")] = true
		}
	}
	for _, q := range []*Plan{p, p.Pre, p.One, p.ClaimOne, p.ClaimRead} {
		if q == nil || q.Kind == KindPass {
			continue
		}
		toks, err := sqllex.Lex(q.SQL, syn)
		if err != nil {
			t.Fatalf("%s: %q: plan text %q does not lex: %v", name, src, q.SQL, err)
		}
		for _, tok := range toks {
			if c := strings.TrimRight(tok.Text(q.SQL), "\r\n"); tok.Kind == sqllex.KindComment && !have[c] {
				t.Fatalf("%s: %q: plan text %q holds the comment %q the caller's text does not", name, src, q.SQL, c)
			}
		}
	}
}

func asRefusal(err error, r **Refusal) bool {
	v, ok := err.(*Refusal)
	*r = v
	return ok
}

// checkPlanContract holds one plan to the contract listed on FuzzPlan.
func checkPlanContract(t *testing.T, name, src string, p *Plan) {
	t.Helper()
	if p == nil {
		t.Fatalf("%s: %q: no plan and no error", name, src)
	}
	checkArgs(t, name, src, p)
	switch p.Kind {
	case KindPass:
		return
	case KindUpdate, KindInsert:
		if !slices.Contains(p.Args, ArgToken) {
			t.Fatalf("%s: %q: %v plan binds no token: %q %v", name, src, p.Kind, p.SQL, p.Args)
		}
	case KindDelete, KindClaim:
		if p.Kind == KindClaim && p.ClaimErr != nil {
			if !isRefusal(p.ClaimErr) {
				t.Fatalf("%s: %q: claim refusal %v (%T) is not a *Refusal", name, src, p.ClaimErr, p.ClaimErr)
			}
			return // a refused claim may name no single guarded table
		}
		if p.Pre == nil || !slices.Contains(p.Pre.Args, ArgToken) {
			t.Fatalf("%s: %q: %v plan without a fencing UPDATE binding the token: %+v", name, src, p.Kind, p.Pre)
		}
		checkArgs(t, name, src, p.Pre)
		if p.One != nil {
			checkOneStatement(t, name, src, p)
		}
	}
	if p.Guard == nil {
		t.Fatalf("%s: %q: %v plan names no guarded table", name, src, p.Kind)
	}
}

// checkArgs: every caller's argument a plan uses is one the caller's text has.
func checkArgs(t *testing.T, name, src string, p *Plan) {
	t.Helper()
	for _, a := range p.Args {
		if a == ArgToken || a == ArgVersion {
			continue
		}
		if a < 0 || p.NUser >= 0 && int(a) >= p.NUser {
			t.Fatalf("%s: %q: argument %d of %d placeholders: %q %v", name, src, a, p.NUser, p.SQL, p.Args)
		}
	}
}

// checkOneStatement: a DELETE's one-statement form is a DELETE of the same table that
// carries the mark and the check (WithDeleteFence), or either the fence condition or
// the check alone (WithDeleteFenceCond), with the token, and the caller's arguments in
// the caller's order, exactly as the two-statement DELETE does.
func checkOneStatement(t *testing.T, name, src string, p *Plan) {
	t.Helper()
	o := p.One
	if p.Kind != KindDelete || o.Kind != KindDelete || o.Guard != p.Guard || o.NUser != p.NUser || o.Pre != nil || o.One != nil {
		t.Fatalf("%s: %q: one-statement form %+v of plan %+v", name, src, o, p)
	}
	// The check is the RETURNING list, or the last item of the caller's RETURNING list,
	// which the wrapper hides (Hidden).
	check := strings.Contains(o.SQL, " RETURNING CHECK(")
	if appended := strings.Contains(o.SQL, ", CHECK(") && !check; appended != (o.Hidden == 1) || o.Hidden > 1 {
		t.Fatalf("%s: %q: one-statement form %q hides %d columns", name, src, o.SQL, o.Hidden)
	} else if appended {
		check = true
	}
	marked := strings.Contains(o.SQL, "MARK(") && check
	fenced := strings.Contains(o.SQL, "FENCE(") != check
	if strings.HasSuffix(name, "/delete-fence-cond") {
		marked = false
	} else {
		fenced = false
	}
	if !marked && !fenced || !slices.Contains(o.Args, ArgToken) {
		t.Fatalf("%s: %q: one-statement form without the mark, the check or the token: %q %v", name, src, o.SQL, o.Args)
	}
	checkArgs(t, name, src, o)
	user := func(args []ArgRef) []ArgRef {
		return slices.DeleteFunc(slices.Clone(args), func(a ArgRef) bool { return a < 0 })
	}
	if !slices.Equal(user(o.Args), user(p.Args)) {
		t.Fatalf("%s: %q: one-statement form binds %v of the caller's, the DELETE %v: %q", name, src, user(o.Args), user(p.Args), o.SQL)
	}
}
