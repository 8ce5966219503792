package plan

import (
	"strings"
	"testing"
)

// TestCollapsingClaimRefused: a locking read of a guarded table whose select list
// collapses its rows (on MySQL/MariaDB an aggregate without OVER, anywhere outside a
// subquery, and a call of a function that is not a known built-in scalar one: a
// stored function may be a user-defined aggregate; DISTINCT) is refused with a
// token, naming why; one that keeps its rows is claimed, and so is IS [NOT] DISTINCT
// FROM (rt19c F2).
func TestCollapsingClaimRefused(t *testing.T) {
	cases := []struct{ sel, why string }{
		{"COUNT(*)", "COUNT()"},
		{"count(id), 1", "count()"},
		{"COALESCE(SUM(balance), 0)", "SUM()"},
		{"1 + MAX(balance)", "MAX()"},
		{"GROUP_CONCAT(id ORDER BY id)", "GROUP_CONCAT()"},
		{"`sum`(balance)", "stored function"}, // the built-in is called by its bare name
		{"DISTINCT owner", "DISTINCT"},
		{"DISTINCTROW owner", "DISTINCT"},
		{"COUNT(DISTINCT owner)", "COUNT()"},
		{"COUNT(*) OVER (PARTITION BY owner) AS n", ""},
		{"SUM(balance) OVER w", ""},
		{"(SELECT COUNT(*) FROM ledger l WHERE l.account_id = accounts.id)", ""},
		{"(SELECT MAX(x) FROM (SELECT 1 AS x) s) + id", ""},
		{"id, balance", ""},
		{"counter(id)", "counter(…)"}, // may be CREATE AGGREGATE FUNCTION counter
		{"COALESCE(balance, 0), UPPER(owner), CAST(balance AS CHAR(10)), id IN (1, 2), IF(id > 1, 1, 0)", ""},
		{"SUM(balance) OVER (), counter(id) OVER ()", ""},
		{"id, owner IS DISTINCT FROM 'bob'", ""},
		{"db.total(id)", "stored function"},
		// rt26b: MariaDB lacks FORMAT_BYTES; a blank before '(' calls a stored
		// function; ESCAPE and AGAINST are not reserved (AGAINST after MATCH (…) is).
		{"format_bytes(id)", "format_bytes(…)"},
		{"substr (owner, 1)", "blank before '('"},
		{"now/**/()", "blank before '('"},
		{"escape(id)", "escape(…)"},
		{"against(id)", "against(…)"},
		{"MATCH (owner) AGAINST ('bob'), id IN (1), CAST(id AS CHAR (3))", ""},
		{"id, owner IS NULL", ""},
		{"id, owner IS NOT NULL", ""},
	}
	for _, d := range []testDialect{mysqlTest, pgTest} {
		rw := newTestRewriter(t, d)
		for _, c := range cases {
			if d == pgTest && strings.Contains(c.sel, "`") {
				continue // a MySQL quoted name
			}
			if d == pgTest && !strings.HasPrefix(c.why, "DISTINCT") {
				// PostgreSQL refuses an aggregate in a locking read itself; a user's
				// function there may be named like one (rt19c F3).
				c.why = ""
			}
			q := "SELECT " + c.sel + " FROM accounts WHERE owner = 'bob' FOR UPDATE"
			p, err := rw.Rewrite(q, false)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			switch {
			case c.why == "" && p.ClaimErr != nil:
				t.Errorf("%s: refused (%v), want it claimed", q, p.ClaimErr)
			case c.why != "" && (p.ClaimErr == nil || !strings.Contains(p.ClaimErr.Error(), c.why)):
				t.Errorf("%s: claim error %v, want a refusal naming %s", q, p.ClaimErr, c.why)
			}
		}
	}
	// A locking read of a table that is not guarded is no claim.
	rw := newTestRewriter(t, mysqlTest)
	if p, err := rw.Rewrite("SELECT COUNT(*) FROM orders WHERE id = 1 FOR UPDATE", false); err != nil || p.ClaimErr != nil {
		t.Errorf("unguarded aggregate locking read: %v %v", p.ClaimErr, err)
	}
}

// TestIsDistinctFromInSelectListClaimed (over-refusal, fixed: claim_collapse.go's
// selectFrom and isDistinctFrom). PostgreSQL's (and
// SQLite's) null-safe comparison `a IS [NOT] DISTINCT FROM b` in a locking read's select
// list — `SELECT id, owner IS DISTINCT FROM $1 AS changed FROM accounts WHERE id = $1
// FOR UPDATE`, a common way to compare a nullable column — is refused with a token:
// the FROM of IS DISTINCT FROM is taken for the statement's FROM clause ("a locking
// SELECT whose FROM is not a plain table"), and the DISTINCT, at the top level of the
// select list, would then be taken for SELECT DISTINCT by collapsingSelect. PostgreSQL
// runs the statement; its rows are the rows it locks. Right behaviour: claimed (one
// statement or two), as the same comparison in parentheses already is.
func TestIsDistinctFromInSelectListClaimed(t *testing.T) {
	rw := newTestRewriter(t, pgTest)
	requireClaimed(t, rw,
		"id, owner IS DISTINCT FROM 'bob' AS changed",
		"id, owner IS NOT DISTINCT FROM $1",
		"id, CASE WHEN balance IS DISTINCT FROM 0 THEN 1 ELSE 0 END")
	// Control: parenthesised, the same comparison is claimed.
	if p, err := rw.Rewrite("SELECT id, (owner IS DISTINCT FROM 'bob') FROM accounts WHERE id = 1 FOR UPDATE", false); err != nil || p.ClaimErr != nil {
		t.Fatalf("control refused: %v %v", err, p.ClaimErr)
	}
}

// TestAggregateNameOfAnotherDialectClaimed (over-refusal, fixed: the aggregate
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
func TestAggregateNameOfAnotherDialectClaimed(t *testing.T) {
	requireClaimed(t, newTestRewriter(t, pgTest),
		"id, billing.total(id)",
		"id, total(balance, 2)",
		`id, "Count"(owner)`,
		"id, std(balance)")
}

// requireClaimed fails for each select list sel whose locking read of accounts rw
// refuses to claim.
func requireClaimed(t *testing.T, rw *Planner, sels ...string) {
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
