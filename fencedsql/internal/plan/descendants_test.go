package plan

import (
	"strings"
	"testing"
)

// PostgreSQL's `*` after a table name (the table and its descendants, as a name without
// ONLY means anyway) is no alias: the fencing assignments of an UPDATE … FROM are
// qualified by the table's name, and a DELETE's statements are built as for the name
// alone (red-team rt27a F1, F2: they read `*."fence_token"` and `*.ctid`, a syntax error
// the server answered after the caller's transaction had done its writes).
func TestDescendantsStarIsNoAlias(t *testing.T) {
	rw := newTestRewriter(t, pgTest)
	for _, c := range []struct{ in, bad string }{
		{`UPDATE accounts * SET balance = 0 FROM ledger WHERE ledger.account_id = accounts.id`, `*.`},
		{`UPDATE accounts * a SET balance = 0 FROM ledger WHERE ledger.account_id = a.id`, `*.`},
		{`DELETE FROM accounts * WHERE id = $1`, `*.`},
	} {
		p, err := rw.Rewrite(c.in, false)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		for _, st := range planSQL(p) {
			if strings.Contains(st, c.bad) {
				t.Errorf("%s: statement qualified by the star: %s", c.in, st)
			}
		}
	}
	// Not PostgreSQL: the star is not read (the server refuses the statement).
	if p, err := newTestRewriter(t, mysqlTest).Rewrite("UPDATE accounts * SET balance = 0", false); err == nil && p.Kind == KindUpdate {
		t.Errorf("MySQL: UPDATE accounts * planned as a fenced UPDATE: %s", p.SQL)
	}
}

// Functions whose value changes between the two statements of a DELETE on PostgreSQL
// mark the two-statement form (red-team rt27a): the transaction's id is assigned by the
// fencing UPDATE, and READ COMMITTED takes a snapshot per statement.
func TestTwoStepTransactionFunctions(t *testing.T) {
	rw := newTestRewriter(t, pgTest)
	for _, f := range []string{"pg_current_xact_id_if_assigned()", "txid_current_if_assigned()", "pg_current_snapshot()", "txid_current_snapshot()"} {
		in := "DELETE FROM accounts WHERE id = $1 AND " + f + " IS NULL"
		p, err := rw.Rewrite(in, false)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if p.TwoStepErr == nil {
			t.Errorf("%s: two statements not refused", in)
		}
	}
}

// planSQL lists the SQL of p and of the plans it carries.
func planSQL(p *Plan) []string {
	var out []string
	for _, q := range []*Plan{p, p.Pre, p.One, p.Stamped, p.Keyed} {
		if q != nil {
			out = append(out, q.SQL)
			if q != p && q.Pre != nil {
				out = append(out, q.Pre.SQL)
			}
		}
	}
	return out
}
