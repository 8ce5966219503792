package plan

import "testing"

// TestClaimOutputNamesAsServerDerives: the output names a claim's ORDER BY can mean besides the
// explicit aliases are read as the server derives them (red-team rt25b): MariaDB drops
// an alias's leading blanks (F1) and names an item without an alias by its text (F5);
// PostgreSQL names an unnamed item "?column?" (F4b), and an item whose output name its
// text need not show (a `*` inside it, (TABLE …), (VALUES …)) may name any output
// (F1b). Before a LIMIT such an ORDER BY is refused with a token; MariaDB also refuses
// an aggregate in the ORDER BY (F5). The plain forms next to them are still claimed.
func TestClaimOutputNamesAsServerDerives(t *testing.T) {
	for _, c := range []struct {
		d       testDialect
		in      string
		refused bool
	}{
		{mysqlTest, "SELECT id, balance, -balance AS ' balance' FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE", true},
		{mysqlTest, "SELECT id, -balance AS `\tbal` FROM accounts ORDER BY bal LIMIT 1 FOR UPDATE", true},
		{mysqlTest, "SELECT id, -balance AS \" bal\" FROM accounts ORDER BY bal LIMIT 1 FOR UPDATE", true},
		{mysqlTest, "SELECT id, -balance FROM accounts ORDER BY `-balance` LIMIT 1 FOR UPDATE", true},
		{mysqlTest, "SELECT id, ABS(balance-7) FROM accounts ORDER BY `abs(balance-7)` LIMIT 1 FOR UPDATE", true},
		{mysqlTest, "SELECT id FROM accounts WHERE id > 0 ORDER BY COUNT(*) FOR UPDATE", true},
		{mysqlTest, "SELECT id FROM accounts WHERE id > 0 ORDER BY my_agg(id) LIMIT 1 FOR UPDATE", true},
		{mysqlTest, "SELECT id, balance, -balance AS neg FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE", false},
		{mysqlTest, "SELECT id FROM accounts WHERE id > 0 ORDER BY ABS(balance - 7), id LIMIT 1 FOR UPDATE", false},
		// rt26b F4: an item of string literals alone is named by their value.
		{mysqlTest, "SELECT id, ('balance') FROM accounts ORDER BY balance DESC LIMIT 1 FOR UPDATE", true},
		{mysqlTest, "SELECT id, 'bal' 'ance' FROM accounts ORDER BY balance DESC LIMIT 1 FOR UPDATE", true},
		{mysqlTest, "SELECT id, _utf8mb4'bal' 'ance' FROM accounts ORDER BY balance DESC LIMIT 1 FOR UPDATE", true},
		{mysqlTest, "SELECT id, ('x') AS y FROM accounts ORDER BY balance DESC LIMIT 1 FOR UPDATE", false},
		{pgTest, `SELECT id, -balance FROM accounts WHERE id > 0 ORDER BY "?column?" LIMIT 1 FOR UPDATE`, true},
		{pgTest, "SELECT id, (SELECT * FROM f(id)) FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE", true},
		{pgTest, "SELECT id, (f(id)).* FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE", true},
		{pgTest, "SELECT id, (TABLE t) FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE", true},
		{pgTest, "SELECT id, (VALUES (1)) FROM accounts ORDER BY column1 LIMIT 1 FOR UPDATE", true},
		{pgTest, "SELECT id, (SELECT * FROM f(id)) AS n FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE", false},
		{pgTest, "SELECT id, (SELECT 1) FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE", false},
		{pgTest, "SELECT accounts.* FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE", false},
		{pgTest, "SELECT id, balance, balance * 2 FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE", false},
	} {
		p, err := newTestRewriter(t, c.d).Rewrite(c.in, false)
		if err != nil || p.Kind != KindClaim {
			t.Errorf("%s: rewrite(%q) = %+v, %v; want a claim plan", c.d.name, c.in, p, err)
			continue
		}
		if got := p.ClaimErr != nil; got != c.refused {
			t.Errorf("%s: %q: claim error %v; want refused %v", c.d.name, c.in, p.ClaimErr, c.refused)
		}
	}
}
