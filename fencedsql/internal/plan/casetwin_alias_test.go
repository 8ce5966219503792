package plan

import "testing"

// A quoted alias spelled like a case twin names no table: the statement is fenced.
// A twin in a table's place is still refused, also next to such aliases.
func TestCaseTwinAliasNotRefused(t *testing.T) {
	for _, q := range []string{
		`UPDATE accounts SET balance = 0 FROM other AS "Accounts" WHERE accounts.id = "Accounts".id`,
		`UPDATE accounts AS "ACCOUNTS" SET balance = 0 WHERE "ACCOUNTS".id = 1`,
		`SELECT id AS "Accounts" FROM accounts WHERE id = 1 FOR UPDATE`,
		`DELETE FROM accounts WHERE id IN (SELECT o.id FROM other o JOIN other2 AS "Accounts" ON "Accounts".id = o.id)`,
		`DELETE FROM accounts WHERE id IN (SELECT x.id FROM (SELECT 1 AS id) "Accounts", other x)`,
		`UPDATE accounts SET balance = 0 FROM "other" "Accounts" WHERE accounts.id = 1`,
	} {
		rw := newTestRewriter(t, pgTest)
		if _, err := rw.Rewrite(q, false); err != nil {
			t.Errorf("rewrite(%q): %v; want it fenced (the quoted name is an alias, not a table)", q, err)
		}
	}
	for _, q := range []string{
		`UPDATE "Accounts" AS a SET balance = 0 WHERE a.id = 1`,
		`UPDATE accounts AS a SET balance = 0 FROM "Accounts" WHERE a.id = 1`,
		`UPDATE accounts SET balance = 0 FROM other JOIN "Accounts" ON true`,
		`UPDATE accounts SET balance = 0 FROM other, "Accounts" AS "ACCOUNTS" WHERE true`,
		`UPDATE ONLY "Accounts" SET balance = 0`,
		`UPDATE public . "Accounts" SET balance = 0`,
	} {
		rw := newTestRewriter(t, pgTest)
		if p, err := rw.Rewrite(q, false); !isRefusal(err) {
			t.Errorf("rewrite(%q) = %v, %v; want a refusal", q, p, err)
		}
	}
}
