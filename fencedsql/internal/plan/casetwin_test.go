package plan

import "testing"

// A quoted name that differs from a guarded table's only in letter case is another
// table on PostgreSQL: a fenced write or claim of it is refused (it would be fenced
// with columns no check looked at); reads, unquoted spellings (folded by the server
// to the guarded table itself) and the other dialects are left alone.
func TestCaseTwinRefused(t *testing.T) {
	for _, q := range []string{
		`UPDATE "Accounts" SET balance = 0 WHERE id = 1`,
		`UPDATE public."ACCOUNTS" SET balance = 0`,
		`INSERT INTO "Accounts" (id, balance) VALUES (1, 2)`,
		`DELETE FROM "accountS" WHERE id = 1`,
		`SELECT * FROM "Accounts" WHERE id = 1 FOR UPDATE`,
		`WITH x AS (SELECT 1) UPDATE "Accounts" SET balance = 0`,
	} {
		rw := newTestRewriter(t, pgTest)
		if p, err := rw.Rewrite(q, false); !isRefusal(err) {
			t.Errorf("rewrite(%q) = %v, %v; want a refusal", q, p, err)
		}
	}
	passes := []struct {
		d testDialect
		q string
	}{
		{pgTest, `UPDATE ACCOUNTS SET balance = 0 WHERE id = 1`},
		{pgTest, `UPDATE Accounts SET balance = 0 WHERE id = 1`},
		{pgTest, `UPDATE "accounts" SET balance = 0 WHERE id = 1`},
		{pgTest, `SELECT count(*) AS "Accounts" FROM accounts`},
		{pgTest, `SELECT * FROM "Accounts"`},
		{mysqlTest, "UPDATE `Accounts` SET balance = 0 WHERE id = 1"},
		{sqliteTest, `UPDATE "Accounts" SET balance = 0 WHERE id = 1`},
	}
	for _, c := range passes {
		rw := newTestRewriter(t, c.d)
		if _, err := rw.Rewrite(c.q, false); err != nil {
			t.Errorf("%s rewrite(%q): %v", c.d.name, c.q, err)
		}
	}
}
