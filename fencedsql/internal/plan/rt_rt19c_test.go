package plan

import "testing"

// TestRT19cIsDistinctFromInSelectListRefused (over-refusal, fixed: claim_collapse.go's
// selectFrom and isDistinctFrom). PostgreSQL's (and
// SQLite's) null-safe comparison `a IS [NOT] DISTINCT FROM b` in a locking read's select
// list — `SELECT id, owner IS DISTINCT FROM $1 AS changed FROM accounts WHERE id = $1
// FOR UPDATE`, a common way to compare a nullable column — is refused with a token:
// the FROM of IS DISTINCT FROM is taken for the statement's FROM clause ("a locking
// SELECT whose FROM is not a plain table"), and the DISTINCT, at the top level of the
// select list, would then be taken for SELECT DISTINCT by collapsingSelect. PostgreSQL
// runs the statement; its rows are the rows it locks. Right behaviour: claimed (one
// statement or two), as the same comparison in parentheses already is.
func TestRT19cIsDistinctFromInSelectListRefused(t *testing.T) {
	rw := newTestRewriter(t, pgTest)
	rt19cClaimed(t, rw,
		"id, owner IS DISTINCT FROM 'bob' AS changed",
		"id, owner IS NOT DISTINCT FROM $1",
		"id, CASE WHEN balance IS DISTINCT FROM 0 THEN 1 ELSE 0 END")
	// Control: parenthesised, the same comparison is claimed.
	if p, err := rw.Rewrite("SELECT id, (owner IS DISTINCT FROM 'bob') FROM accounts WHERE id = 1 FOR UPDATE", false); err != nil || p.ClaimErr != nil {
		t.Fatalf("control refused: %v %v", err, p.ClaimErr)
	}
}

// TestRT19cAggregateNameOfAnotherDialectRefused (over-refusal, fixed: the aggregate
// names are judged on MySQL/MariaDB only, bare). claim_collapse.go's
// aggregate list is shared by every dialect and matches a call by its last name
// only: on PostgreSQL, which has no aggregate total(), std() or group_concat(), a
// user's scalar function so named — `billing.total(order_id)`, or a quoted
// case-sensitive "Count"(x), which is not count — refuses the claim with "an
// aggregate … its rows are not the rows it locks". (A real aggregate in a PostgreSQL
// locking read is refused by the server itself: "FOR UPDATE is not allowed with
// aggregate functions".) Right behaviour: match per dialect, unqualified (or
// pg_catalog-qualified) names only, and a quoted name only when it spells the
// aggregate exactly (PostgreSQL folds only unquoted names).
func TestRT19cAggregateNameOfAnotherDialectRefused(t *testing.T) {
	rt19cClaimed(t, newTestRewriter(t, pgTest),
		"id, billing.total(id)",
		"id, total(balance, 2)",
		`id, "Count"(owner)`,
		"id, std(balance)")
}

// rt19cClaimed fails for each select list sel whose locking read of accounts rw
// refuses to claim.
func rt19cClaimed(t *testing.T, rw *Planner, sels ...string) {
	t.Helper()
	for _, sel := range sels {
		q := "SELECT " + sel + " FROM accounts WHERE id = 1 FOR UPDATE"
		p, err := rw.Rewrite(q, false)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if p.ClaimErr != nil {
			t.Errorf("OVER-REFUSAL: %s: %v", q, p.ClaimErr)
		}
	}
}
