package plan

import (
	"strings"
	"testing"
)

// A locking clause the server does not take is refused before anything is sent: the
// claim's fencing UPDATE would stamp the rows and the read then fail (red-team rt31c F6).
func TestLockingClauseNotTakenRefused(t *testing.T) {
	for _, c := range []struct {
		d       testDialect
		sql     string
		claimed bool
	}{
		{sqliteTest, "SELECT balance FROM accounts WHERE id = ? FOR UPDATE", false},
		{sqliteTest, "SELECT balance FROM accounts WHERE id = ? FOR SHARE", false},
		{mysqlTest, "SELECT balance FROM accounts WHERE id = ? FOR SHARE", false},
		{mysqlTest, "SELECT balance FROM accounts WHERE id = ? FOR KEY SHARE", false},
		{mysqlTest, "SELECT balance FROM accounts WHERE id = ? FOR NO KEY UPDATE", false},
		{mysqlTest, "SELECT balance FROM accounts WHERE id = ? FOR UPDATE OF accounts", false},
		{mysqlTest, "SELECT balance FROM accounts WHERE id = ? FOR UPDATE garbage", false},
		{mysqlTest, "SELECT balance FROM accounts WHERE id = ? LOCK IN SHARE MODE x", false},
		{mysqlTest, "SELECT balance FROM accounts WHERE id = ? FOR UPDATE", true},
		{mysqlTest, "SELECT balance FROM accounts WHERE id = ? for update;", true},
		{mysqlTest, "SELECT balance FROM accounts WHERE id = ? LOCK IN SHARE MODE", true},
		{pgTest, "SELECT balance FROM accounts WHERE id = $1 FOR KEY SHARE", true},
	} {
		pl, err := newTestRewriter(t, c.d).Rewrite(c.sql, false)
		if err != nil || pl.Kind != KindClaim {
			t.Errorf("%s: %s: %v, %+v; want a claim", c.d.name, c.sql, err, pl)
			continue
		}
		switch {
		case c.claimed && pl.ClaimErr != nil:
			t.Errorf("%s: %s: %v; want it claimed", c.d.name, c.sql, pl.ClaimErr)
		case !c.claimed && (!isRefusal(pl.ClaimErr) || !strings.Contains(pl.ClaimErr.Error(), "the server would reject it")):
			t.Errorf("%s: %s: %v; want it refused as a clause the server does not take", c.d.name, c.sql, pl.ClaimErr)
		}
	}
}
