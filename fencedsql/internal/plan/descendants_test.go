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

// MySQL/MariaDB index hints after a single UPDATE's table stay in the one fenced
// statement (red-team rt27b F3); elsewhere the words are not hints.
func TestUpdateIndexHints(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest)
	for _, in := range []string{
		"UPDATE accounts USE INDEX (PRIMARY) SET balance = ? WHERE id = ?",
		"UPDATE accounts a FORCE INDEX FOR ORDER BY (PRIMARY), IGNORE KEY (ix_owner) SET a.balance = ? WHERE a.id = ? ORDER BY a.id LIMIT 1",
	} {
		p, err := rw.Rewrite(in, false)
		if err != nil || p.Kind != KindUpdate {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if !strings.Contains(p.SQL, "`fence_token` = CASE WHEN") || !strings.HasPrefix(p.SQL, in[:strings.Index(in, " SET ")]) {
			t.Errorf("%s: rewritten as %s", in, p.SQL)
		}
	}
	// A hint followed by something else is no single-table UPDATE the planner knows.
	if _, err := rw.Rewrite("UPDATE accounts USE INDEX (PRIMARY) JOIN t2 SET balance = 1", false); err == nil {
		t.Errorf("UPDATE … USE INDEX … JOIN: not refused")
	}
}

// A fencing column in an INSERT column list qualified by the target is the column
// itself on MySQL/MariaDB (dropped, the wrapper's value takes its place: red-team rt27b
// F4), and refused elsewhere. (Other qualifiers: TestMySQLFencingColumnQualifiedByOtherName.)
func TestInsertQualifiedFencingColumn(t *testing.T) {
	p, err := newTestRewriter(t, mysqlTest).Rewrite("INSERT INTO db.accounts (id, accounts.fence_token, `db`.`accounts`.`version`) VALUES (?, ?, ?)", false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.SQL, "accounts.fence_token") || strings.Contains(p.SQL, "`accounts`.`version`") {
		t.Errorf("qualified fencing columns kept: %s", p.SQL)
	}
	if _, err := newTestRewriter(t, pgTest).Rewrite("INSERT INTO accounts (id, accounts.fence_token) VALUES ($1, $2)", false); !isRefusal(err) {
		t.Errorf("PostgreSQL: err = %v, want a refusal", err)
	}
}
