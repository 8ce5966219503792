package plan

import "testing"

// A text that names a guarded table and holds a [ is session-dependent on MySQL/MariaDB
// (sql_mode=MSSQL reads [name] as an identifier, red-team rt51e F1): its plan is
// Ambiguous, so the session check runs before it is sent. PostgreSQL's [ (array
// subscripts) depends on no setting.
func TestSessionDependentBrackets(t *testing.T) {
	for _, c := range []struct {
		d    testDialect
		sql  string
		want bool
	}{
		{mysqlTest, "UPDATE ledger AS [l'] JOIN accounts a ON a.id = [l'].account_id SET a.balance = 0", true},
		{mysqlTest, "SELECT 1 AS [#]; DELETE FROM accounts", true},
		{mysqlTest, "SELECT 1 AS [x/*]; DELETE FROM accounts; SELECT 1 AS [*/]", true},
		{mysqlTest, "SELECT balance FROM accounts WHERE id = 1", false},
		{pgTest, "SELECT tags[1] FROM accounts WHERE id = 1", false},
	} {
		p, err := newTestRewriter(t, c.d).Rewrite(c.sql, false)
		if err != nil {
			t.Errorf("%s: %q: %v", c.d.name, c.sql, err)
			continue
		}
		if p.Ambiguous != c.want {
			t.Errorf("%s: %q: Ambiguous = %v, want %v", c.d.name, c.sql, p.Ambiguous, c.want)
		}
	}
}
