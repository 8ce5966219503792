package plan

import (
	"strings"
	"testing"
)

// MariaDB's temporal clauses (red-team rt50b F3): DELETE HISTORY passes on a guarded
// table — unless MySQL, which reads `DELETE history FROM history` as a multi-table
// DELETE of the table history, could read it as a write of a guarded table, or its
// shape is unknown; UPDATE … FOR PORTION OF and a claim … FOR SYSTEM_TIME are refused
// with reasons that name them.
func TestTemporalClausesMySQL(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("accounts"))
	for _, sql := range []string{
		"DELETE HISTORY FROM accounts",
		"delete history from `accounts` before system_time now(6)",
		"DELETE HISTORY FROM accounts BEFORE SYSTEM_TIME TIMESTAMP '2020-01-01 00:00:00'",
		"DELETE HISTORY FROM accounts PARTITION (p0) BEFORE SYSTEM_TIME NOW()",
		"DELETE HISTORY FROM other",
	} {
		if p, err := rw.Rewrite(sql, false); err != nil || p.Kind != KindPass {
			t.Errorf("%s: %v; want passed (it removes history rows only)", sql, err)
		}
	}
	for sql, want := range map[string]string{
		"DELETE HISTORY FROM accounts WHERE id = 1":                        "DELETE HISTORY",
		"DELETE HISTORY FROM accounts a":                                   "DELETE HISTORY",
		"UPDATE accounts FOR PORTION OF p FROM 1 TO 2 SET x = 1":           "FOR PORTION OF",
		"SET STATEMENT system_versioning_asof = '2000-01-01' FOR SELECT 1": "(to any value)",
	} {
		_, err := rw.Rewrite(sql, false)
		if !isRefusal(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want refused naming %q", sql, err, want)
		}
	}
	for _, sql := range []string{
		"SELECT id FROM accounts FOR SYSTEM_TIME ALL FOR UPDATE",
		"SELECT id FROM accounts FOR SYSTEM_TIME AS OF TIMESTAMP '2000-01-01' AS a WHERE a.id = 1 FOR UPDATE",
		"SELECT id FROM accounts FOR SYSTEM_TIME BETWEEN NOW() - INTERVAL 1 DAY AND NOW() WHERE id = 1 LOCK IN SHARE MODE",
	} {
		p, err := rw.Rewrite(sql, false)
		if err == nil && p.ClaimErr != nil {
			err = p.ClaimErr
		}
		if !isRefusal(err) || !strings.Contains(err.Error(), "FOR SYSTEM_TIME") {
			t.Errorf("%s: %v; want the claim refused naming FOR SYSTEM_TIME", sql, err)
		}
	}
	// MySQL reads DELETE history FROM history as a write of the table history: with
	// history guarded, refused.
	h := newTestRewriter(t, mysqlTest, Guard("history"))
	if _, err := h.Rewrite("DELETE HISTORY FROM history", false); !isRefusal(err) {
		t.Errorf("DELETE HISTORY FROM history, history guarded: %v; want refused", err)
	}
	if p, err := rw.Rewrite("UPDATE other FOR PORTION OF p FROM 1 TO 2 SET x = 1", false); err != nil || p.Kind != KindPass {
		t.Errorf("UPDATE of an unguarded table FOR PORTION OF: %v; want passed", err)
	}
}
