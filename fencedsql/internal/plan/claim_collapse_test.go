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
