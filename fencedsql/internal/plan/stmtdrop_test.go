package plan

import "testing"

// TestDropsStatements: the statements that may drop the session's prepared statements,
// which the driver may still send by name, are flagged on PostgreSQL and only there
// (red-team rt57a F2; conn.statementsDropped).
func TestDropsStatements(t *testing.T) {
	for _, c := range []struct {
		d    testDialect
		sql  string
		want bool
	}{
		{pgTest, `DISCARD ALL`, true},
		{pgTest, `discard plans`, true},
		{pgTest, `DEALLOCATE ALL`, true},
		{pgTest, `DEALLOCATE PREPARE ALL`, true},
		{pgTest, `DEALLOCATE stmtcache_0123abcd`, true},
		{pgTest, `SELECT 1; DEALLOCATE ALL`, true},
		{pgTest, `SELECT * FROM t WHERE a = 1`, false},
		{pgTest, `UPDATE t SET a = 1`, false},
		{pgTest, `SELECT discarded FROM t`, false},
		{mysqlTest, `DEALLOCATE PREPARE s`, false},
		{sqliteTest, `SELECT 1`, false},
	} {
		rw := newTestRewriter(t, c.d, Guard("accounts"))
		if got := rw.DropsStatements(c.sql); got != c.want {
			t.Errorf("%s: DropsStatements(%q) = %v, want %v", c.d.Name(), c.sql, got, c.want)
		}
		if p, err := rw.Rewrite(c.sql, false); err == nil && p.DropsStatements != c.want {
			t.Errorf("%s: Rewrite(%q).DropsStatements = %v, want %v", c.d.Name(), c.sql, p.DropsStatements, c.want)
		}
	}
}
