package plan

import (
	"strings"
	"testing"
)

// An optimizer hint (/*+ … */, MySQL/MariaDB) is a blank to the planner: a read that
// carries one passes, a write or claim is planned as without it (the rewritten text
// keeps it where the caller wrote it); SET_VAR is refused in a statement that names a
// guarded table; executable comments (/*! … */, /*M! … */) are judged as before
// (red-team rt31g F1).
func TestOptimizerHintIsBlank(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest)
	for _, c := range []struct{ hinted, plain string }{
		{"SELECT /*+ INDEX(accounts PRIMARY) */ * FROM accounts WHERE id = ?", "SELECT * FROM accounts WHERE id = ?"},
		{"SELECT /*+ NO_INDEX_MERGE(accounts) */ * FROM accounts WHERE id = ?", "SELECT * FROM accounts WHERE id = ?"},
		{"UPDATE /*+ BNL() */ accounts SET balance = ? WHERE id = ?", "UPDATE accounts SET balance = ? WHERE id = ?"},
		{"UPDATE /*+ NO_MERGE(accounts) */ accounts SET balance = ? WHERE id = ?", "UPDATE accounts SET balance = ? WHERE id = ?"},
		{"DELETE /*+ BNL() */ FROM accounts WHERE id = ?", "DELETE FROM accounts WHERE id = ?"},
		{"/*+ BNL() */ DELETE FROM accounts WHERE id = ?", "DELETE FROM accounts WHERE id = ?"},
		{"INSERT /*+ BNL() */ INTO accounts (id, balance) VALUES (?, ?)", "INSERT INTO accounts (id, balance) VALUES (?, ?)"},
		{"INSERT /*+ BNL() */ INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = VALUES(balance)", "INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = VALUES(balance)"},
		{"SELECT /*+ BNL() */ * FROM accounts WHERE id = ? ORDER BY id LIMIT 1 FOR UPDATE", "SELECT * FROM accounts WHERE id = ? ORDER BY id LIMIT 1 FOR UPDATE"},
	} {
		hp, herr := rw.Rewrite(c.hinted, false)
		pp, perr := rw.Rewrite(c.plain, false)
		if herr != nil || perr != nil {
			t.Errorf("%s: %v (without the hint: %v); want it planned as without the hint", c.hinted, herr, perr)
			continue
		}
		if hp.Kind != pp.Kind || hp.NUser != pp.NUser || (pp.Kind != KindPass && hp.Guard.String() != pp.Guard.String()) ||
			(hp.Pre == nil) != (pp.Pre == nil) || (hp.One == nil) != (pp.One == nil) || (hp.ClaimErr == nil) != (pp.ClaimErr == nil) {
			t.Errorf("%s: %+v; without the hint: %+v", c.hinted, hp, pp)
		}
		if pp.Kind != KindPass && !strings.Contains(hp.SQL, "/*+") {
			t.Errorf("%s: the rewrite dropped the hint: %s", c.hinted, hp.SQL)
		}
	}
	for _, q := range []string{
		"UPDATE /*+ SET_VAR(sql_mode='') */ accounts SET balance = ? WHERE id = ?",
		"SELECT /*+ set_var(sql_mode = '') */ * FROM accounts WHERE id = ? FOR UPDATE",
		"DELETE /*+ SET_VAR(foreign_key_checks=OFF) */ FROM accounts WHERE id = ?",
	} {
		_, err := rw.Rewrite(q, false)
		if !isRefusal(err) || !strings.Contains(err.Error(), "optimizer hint SET_VAR") {
			t.Errorf("%s: %v; want it refused as an optimizer hint SET_VAR", q, err)
		}
	}
	// A hint on a table that is not guarded, SET_VAR included, is not the planner's concern.
	if pl, err := rw.Rewrite("UPDATE /*+ SET_VAR(sql_mode='') */ ledger SET x = 1", false); err != nil || pl.Kind != KindPass {
		t.Errorf("SET_VAR on ledger: %v, %+v; want it passed", err, pl)
	}
	// Executable comments stay judged as statement text.
	for _, q := range []string{
		"SELECT /*! INDEX(accounts) */ * FROM accounts WHERE id = ?",
		"SELECT * FROM accounts WHERE id = ? /*M! delete */",
		"UPDATE accounts SET balance = ? /*!, fence_token = 0 */ WHERE id = ?",
		"UPDATE accounts SET balance = ? /*!50000 , fence_token = 0 */ WHERE id = ?",
		"/*!DELETE*/ FROM accounts WHERE id = ?",
		"/*M!100000 DELETE */ FROM accounts WHERE id = ?",
	} {
		if _, err := rw.Rewrite(q, false); !isRefusal(err) {
			t.Errorf("%s: %v; want it refused (an executable comment)", q, err)
		}
	}
}
