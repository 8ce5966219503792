package redteam

import "testing"

// Red-team rt33b: the planner relaxations of rt31e/rt31g (DELETE reading a guarded
// table, PostgreSQL OF lists, optimizer hints) and the locking-clause refusal.

// TestMultiDeleteLeftRightFunctionsInOn (over-refusal): MariaDB's multi-table
// DELETE whose targets are only unguarded tables now passes (rt31e F2), but the table
// list reader (plan/tablelist.go tableQualifiers → multiupdate.go listEnd) ends an ON
// condition at any LEFT or RIGHT word, so a join condition calling the string
// functions LEFT(…) or RIGHT(…) — "delete the ledger rows of accounts whose code
// starts with X" — is refused as "a multi-table DELETE whose table list it cannot
// read", although the DELETE's only target is the unguarded ledger. The same
// statement with SUBSTRING(a.code, 1, 1) instead of LEFT(a.code, 1) passes. Right
// behaviour: sent as written (a LEFT/RIGHT followed by '(' is a function call, not a
// join keyword).
func TestMultiDeleteLeftRightFunctionsInOn(t *testing.T) {
	overRefusals(t, mysqlBackend(), []entry{
		{name: "delete_on_left_fn", steps: []step{x("DELETE l FROM ledger l JOIN accounts a ON LEFT(l.note, 1) = 'x' AND a.id = l.account_id WHERE a.balance < 0")}},
		{name: "delete_using_on_right_fn", steps: []step{x("DELETE FROM l USING ledger l JOIN accounts a ON a.id = l.account_id AND RIGHT(l.note, 2) = 'zz'")}},
	})
}
