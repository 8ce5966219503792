package plan

import (
	"strings"
	"testing"
)

// Text after a locking read's locking clause that the claim cannot carry is refused
// (ErrUnsupported) before anything is sent, never dropped: the claim rebuilds the read
// up to the clause, so `FOR UPDATE UNION ALL SELECT …` returned the first branch's rows
// only and `FOR UPDATE garbage words` ran without the server's syntax error (red-team
// rt65a F4). What the claim carries (an OF list, NOWAIT, SKIP LOCKED, WAIT n, a final
// ';') is judged as before.
func TestLockingReadTailAfterClauseRefused(t *testing.T) {
	for _, c := range []struct {
		d       testDialect
		sql     string
		claimed bool
	}{
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE UNION ALL SELECT id FROM accounts WHERE id = 2", false},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE UNION ALL SELECT 2", false},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE garbage words", false},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR SHARE INTERSECT SELECT 1", false},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR NO KEY UPDATE EXCEPT SELECT 1", false},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR KEY SHARE NOWAIT garbage", false},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE OF accounts garbage", false},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE OF accounts, ", false},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE OF", false},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE (SELECT 1)", false},
		{pgTest, "SELECT id FROM accounts WHERE id = $1 ORDER BY id FOR UPDATE WHERE true", false},
		{mysqlTest, "SELECT id FROM accounts WHERE id = ? FOR UPDATE UNION ALL SELECT 2", false},
		{mysqlTest, "SELECT id FROM accounts WHERE id = ? FOR UPDATE NOWAIT garbage", false},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE", true},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE;", true},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE NOWAIT", true},
		{pgTest, "SELECT id FROM accounts a WHERE id = 1 FOR UPDATE OF a NOWAIT", true},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE OF accounts", true},
		{pgTest, "SELECT id FROM public.accounts WHERE id = 1 FOR UPDATE OF accounts;", true},
		{pgTest, "SELECT id FROM accounts WHERE id = 1 FOR NO KEY UPDATE", true},
		{mysqlTest, "SELECT id FROM accounts WHERE id = ? FOR UPDATE", true},
		{mysqlTest, "SELECT id FROM accounts WHERE id = ? LOCK IN SHARE MODE;", true},
	} {
		pl, err := newTestRewriter(t, c.d).Rewrite(c.sql, false)
		if err != nil || pl.Kind != KindClaim {
			t.Errorf("%s: %s: %v, %+v; want a claim", c.d.name, c.sql, err, pl)
			continue
		}
		switch {
		case c.claimed && pl.ClaimErr != nil:
			t.Errorf("%s: %s: %v; want it claimed", c.d.name, c.sql, pl.ClaimErr)
		case !c.claimed && (!isRefusal(pl.ClaimErr) || pl.SQL != c.sql):
			t.Errorf("%s: %s: %+v; want it refused (ErrUnsupported), its text kept", c.d.name, c.sql, pl)
		case !c.claimed && c.d.name == "postgres" && !strings.Contains(pl.ClaimErr.Error(), "after the locking clause"):
			t.Errorf("%s: %s: %v; want the refusal to name the text after the locking clause", c.d.name, c.sql, pl.ClaimErr)
		}
	}
}
