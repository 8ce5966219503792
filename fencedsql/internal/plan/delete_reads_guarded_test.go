package plan

import "testing"

// A DELETE whose every target is a table that is not guarded passes, even when it reads
// a guarded table (PostgreSQL's DELETE … USING, MySQL's multi-table DELETE, a read-only
// WITH list before it); one that deletes from a guarded table, or its alias, stays
// refused (red-team rt31e F1, F2). A target that is the alias of an unguarded table is
// that table, even when spelled like the guarded one (red-team rt47f F2).
func TestDeleteReadingGuardedPasses(t *testing.T) {
	for _, c := range []struct {
		d    testDialect
		sql  string
		pass bool
	}{
		{pgTest, "DELETE FROM ledger USING accounts WHERE ledger.account_id = accounts.id", true},
		{pgTest, "DELETE FROM ledger l USING accounts a WHERE l.account_id = a.id", true},
		{pgTest, "DELETE FROM ONLY ledger USING ledger l2 JOIN accounts a ON a.id = l2.account_id WHERE ledger.id = l2.id", true},
		{pgTest, "DELETE FROM accounts USING ledger WHERE ledger.account_id = accounts.id", false},
		{pgTest, "DELETE FROM accounts a USING ledger l WHERE l.account_id = a.id", false},
		{mysqlTest, "DELETE l FROM ledger l JOIN accounts a ON a.id = l.account_id WHERE a.balance < 250", true},
		{mysqlTest, "DELETE ledger FROM ledger JOIN accounts ON accounts.id = ledger.account_id", true},
		{mysqlTest, "DELETE l.* FROM ledger AS l, accounts WHERE accounts.id = l.account_id", true},
		{mysqlTest, "DELETE FROM l USING ledger l JOIN accounts a ON a.id = l.account_id WHERE a.id = 2", true},
		{mysqlTest, "DELETE a FROM ledger l JOIN accounts a ON a.id = l.account_id", false},
		{mysqlTest, "DELETE l, a FROM ledger l JOIN accounts a ON a.id = l.account_id", false},
		{mysqlTest, "DELETE l, accounts FROM ledger l JOIN accounts ON accounts.id = l.account_id", false},
		// An alias spelled like the guarded table stands for the aliased table (red-team
		// rt47f F2: MariaDB deletes from ledger only).
		{mysqlTest, "DELETE accounts FROM ledger AS accounts JOIN accounts AS x ON x.id = accounts.account_id", true},
		{mysqlTest, "DELETE accounts FROM ledger AS accounts JOIN accounts ON accounts.id = 1", false},
		{mysqlTest, "DELETE db.accounts FROM ledger AS accounts JOIN accounts AS x", false},
		{mysqlTest, "DELETE ledger FROM accounts AS ledger JOIN ledger AS l2 ON l2.id = ledger.id", false},
		{mysqlTest, "DELETE a.* FROM accounts a", false},
		{mysqlTest, "DELETE x FROM ledger l JOIN accounts a ON a.id = l.account_id", false},
		{mysqlTest, "DELETE FROM a USING ledger l JOIN accounts a ON a.id = l.account_id", false},
		{mysqlTest, "DELETE FROM l, a USING ledger l JOIN accounts a ON a.id = l.account_id", false},
		{mysqlTest, "DELETE FROM accounts USING accounts JOIN ledger ON ledger.account_id = accounts.id", false},
		{mysqlTest, "DELETE l FROM ledger l JOIN (SELECT id FROM accounts) a ON a.id = l.account_id", false},
		{pgTest, "WITH x AS (SELECT id FROM accounts) DELETE FROM ledger WHERE account_id IN (SELECT id FROM x)", true},
		{sqliteTest, "WITH x AS (SELECT 2 AS id) DELETE FROM ledger WHERE account_id IN (SELECT id FROM accounts WHERE id IN (SELECT id FROM x))", true},
		{pgTest, "WITH x AS (SELECT 1 AS id) DELETE FROM ledger USING accounts WHERE accounts.id = ledger.account_id", true},
		{pgTest, "WITH x AS (SELECT id FROM ledger) DELETE FROM accounts WHERE id IN (SELECT id FROM x)", false},
		{sqliteTest, "WITH x AS (SELECT id FROM ledger) DELETE FROM accounts WHERE id IN (SELECT id FROM x)", false},
		{pgTest, "WITH x AS (DELETE FROM accounts RETURNING id) DELETE FROM ledger WHERE account_id IN (SELECT id FROM x)", false},
		{pgTest, "WITH x AS (UPDATE accounts SET balance = 0 RETURNING id) DELETE FROM ledger", false},
		{mysqlTest, "WITH x AS (SELECT id FROM accounts) DELETE l FROM ledger l JOIN x ON x.id = l.account_id", true},
		{mysqlTest, "WITH x AS (SELECT id FROM ledger) DELETE a FROM accounts a JOIN x ON x.id = a.id", false},
	} {
		pl, err := newTestRewriter(t, c.d).Rewrite(c.sql, false)
		switch {
		case c.pass && (err != nil || pl.Kind != KindPass):
			t.Errorf("%s: %s: %v, %+v; want it passed", c.d.name, c.sql, err, pl)
		case !c.pass && !isRefusal(err):
			t.Errorf("%s: %s: %v, %+v; want it refused", c.d.name, c.sql, err, pl)
		}
	}
}
