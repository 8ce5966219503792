package redteam

import "testing"

// Red-team rt31e F1, F2: a DELETE of a table that is not guarded, reading a guarded one.

// TestOverRefusalDeleteReadsGuardedPostgres (over-refusal): a DELETE of an
// UNGUARDED table that only reads the guarded table — PostgreSQL's DELETE … USING,
// the usual "delete the ledger rows of these accounts" — is refused as "a
// multi-table DELETE" (plan/delete.go: any guarded name between the table and WHERE, before the fix),
// although it writes no row of accounts, and the same join as an UPDATE
// (UPDATE ledger … FROM accounts) or a MERGE INTO ledger USING accounts passes
// (TestOverRefusal*). Right behaviour: sent as written, like the UPDATE, since the
// only table it writes is unguarded; only a USING/JOIN list whose DELETE target is
// the guarded table (or its alias) needs the refusal.
func TestOverRefusalDeleteReadsGuardedPostgres(t *testing.T) {
	overRefusals(t, postgresBackend(), []entry{
		{name: "delete_using_accounts", steps: []step{x("DELETE FROM ledger USING accounts WHERE ledger.account_id = accounts.id AND accounts.balance < 250")}},
		{name: "delete_using_alias", steps: []step{x("DELETE FROM ledger l USING accounts a WHERE l.account_id = a.id AND a.id = 1")}},
		{name: "delete_using_join", steps: []step{x("DELETE FROM ledger USING ledger l2 JOIN accounts a ON a.id = l2.account_id WHERE ledger.id = l2.id AND a.id = 2")}},
	})
}

// TestOverRefusalDeleteReadsGuardedMariaDB (over-refusal): MariaDB's
// multi-table DELETE whose target list names only unguarded tables (DELETE l FROM
// ledger l JOIN accounts a …, DELETE FROM l USING ledger l JOIN accounts a …) is
// refused as "a multi-table DELETE", while the multi-table UPDATE whose SET targets
// only unguarded tables passes (design G11 "Refusing less"). Right behaviour: sent as
// written when no target of the DELETE's list is (an alias of) a guarded table.
func TestOverRefusalDeleteReadsGuardedMariaDB(t *testing.T) {
	overRefusals(t, mysqlBackend(), []entry{
		{name: "delete_alias_from_join", steps: []step{x("DELETE l FROM ledger l JOIN accounts a ON a.id = l.account_id WHERE a.balance < 250")}},
		{name: "delete_table_from_join", steps: []step{x("DELETE ledger FROM ledger JOIN accounts ON accounts.id = ledger.account_id WHERE accounts.id = 1")}},
		{name: "delete_from_using_join", steps: []step{x("DELETE FROM l USING ledger l JOIN accounts a ON a.id = l.account_id WHERE a.id = 2")}},
	})
}

// TestOverRefusalWithDeleteOfUnguarded (over-refusal): a DELETE of an
// UNGUARDED table under a read-only WITH list that reads the guarded table (or whose
// WHERE does) is refused as "WITH … DELETE on a guarded table" (plan/route.go with():
// every statement after a WITH list that is not UPDATE/INSERT/SELECT is refused when a
// guarded name appears anywhere). The comment there gives the reason for a DELETE OF
// the guarded table (its fencing UPDATE would need the list); here nothing guarded is
// written, and the same statement as an UPDATE of ledger passes (all three were refused before the fix). Right behaviour:
// sent as written when the DELETE's target is not guarded.
func TestOverRefusalWithDeleteOfUnguarded(t *testing.T) {
	es := func() []entry {
		return []entry{
			{name: "with_reads_accounts_delete_ledger", steps: []step{x("WITH x AS (SELECT id FROM accounts WHERE balance < 250) DELETE FROM ledger WHERE account_id IN (SELECT id FROM x)")}},
			{name: "with_delete_ledger_where_accounts", steps: []step{x("WITH x AS (SELECT 2 AS id) DELETE FROM ledger WHERE account_id IN (SELECT id FROM accounts WHERE id IN (SELECT id FROM x))")}},
		}
	}
	t.Run("postgres", func(t *testing.T) { overRefusals(t, postgresBackend(), es()) })
	t.Run("sqlite", func(t *testing.T) { overRefusals(t, sqliteBackend(), es()) })
}
