package plan

import (
	"strings"
	"testing"
)

// A PostgreSQL locking read over a join whose locking clauses all name, in their OF
// lists, only relations that are not guarded tables (nor their aliases, nor subqueries)
// locks no guarded row: it passes with its relations for the view check; a bare FOR
// UPDATE, or an OF list that may reach a guarded table, is still refused with a token
// (red-team rt31e F3).
func TestJoinLockingOnlyUnguardedPasses(t *testing.T) {
	rw := newTestRewriter(t, pgTest)
	for _, c := range []struct {
		sql  string
		pass bool
	}{
		{"SELECT l.id FROM ledger l JOIN accounts a ON a.id = l.account_id WHERE a.balance > 0 FOR UPDATE OF l", true},
		{"SELECT l.id FROM ledger l, accounts a WHERE a.id = l.account_id FOR NO KEY UPDATE OF l NOWAIT", true},
		{"SELECT 1 FROM accounts a JOIN ledger l ON a.id = l.account_id FOR SHARE OF l, m SKIP LOCKED", true},
		{"SELECT 1 FROM ledger JOIN accounts ON accounts.id = ledger.account_id FOR UPDATE OF ledger FOR SHARE OF ledger", true},
		{"SELECT l.id FROM ledger l JOIN accounts a ON a.id = l.account_id FOR UPDATE", false},
		{"SELECT l.id FROM ledger l JOIN accounts a ON a.id = l.account_id FOR UPDATE OF a", false},
		{"SELECT l.id FROM ledger l JOIN accounts a ON a.id = l.account_id FOR UPDATE OF l, a", false},
		{"SELECT l.id FROM ledger l JOIN accounts a ON a.id = l.account_id FOR UPDATE OF l FOR SHARE", false},
		{"SELECT l.id FROM ledger l JOIN accounts ON accounts.id = l.account_id FOR UPDATE OF accounts", false},
		{"SELECT 1 FROM ledger l JOIN accounts AS \"x\" ON true FOR UPDATE OF x", false},
		{"SELECT 1 FROM ledger l JOIN public.accounts x ON true FOR UPDATE OF X", false},
		{"SELECT 1 FROM ledger JOIN accounts AS ledger2 ON true JOIN ledger2 ON true FOR UPDATE OF ledger2", false},
		{"SELECT 1 FROM ledger l JOIN (SELECT id FROM accounts) s ON s.id = l.account_id FOR UPDATE OF s", false},
		{"SELECT 1 FROM ledger l JOIN accounts a (i, b, t, v) ON a.i = l.account_id FOR UPDATE OF a", false},
		{"SELECT 1 FROM ledger l JOIN public.accounts ON true FOR UPDATE OF public.ledger", false},
		{`SELECT 1 FROM ledger l JOIN U&"\0061ccounts" x ON true FOR UPDATE OF x`, false},
		{`SELECT 1 FROM ledger m JOIN accounts U&"\006C" ON true FOR UPDATE OF l`, false},
		{"WITH s AS (SELECT id FROM accounts) SELECT 1 FROM ledger l JOIN s ON s.id = l.account_id FOR UPDATE OF l", true},
		// Names compared otherwise than PostgreSQL compares them (red-team rt33b F1):
		// longer than 63 bytes (cut there by the server), or holding a non-ASCII letter
		// (folded by the server in ASCII only).
		{"SELECT 1 FROM ledger l, accounts AS " + strings.Repeat("a", 63) + "x FOR UPDATE OF " + strings.Repeat("a", 63) + "y", false},
		{`SELECT 1 FROM ledger l, accounts AS "É" FOR UPDATE OF É`, false},
		{`SELECT 1 FROM ledger é, accounts a FOR UPDATE OF é`, false},
	} {
		pl, err := rw.Rewrite(c.sql, false)
		switch {
		case c.pass && (err != nil || pl.Kind != KindPass):
			t.Errorf("%s: %v, %+v; want it passed", c.sql, err, pl)
		case c.pass && len(pl.LockThrough) == 0:
			t.Errorf("%s: no LockThrough: the view check would not see what it locks", c.sql)
		case !c.pass && !refusedWithToken(pl, err):
			t.Errorf("%s: %v, %+v; want it refused with a token", c.sql, err, pl)
		}
	}
	// MySQL/MariaDB: unchanged (MariaDB has no OF).
	pl, err := newTestRewriter(t, mysqlTest).Rewrite("SELECT l.id FROM ledger l JOIN accounts a ON a.id = l.account_id FOR UPDATE", false)
	if !refusedWithToken(pl, err) {
		t.Errorf("mysql join FOR UPDATE: %v, %+v; want it refused with a token", err, pl)
	}
}
