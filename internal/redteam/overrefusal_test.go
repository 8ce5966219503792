package redteam

import "testing"

// Over-refusals (issue 22 item 6): statements that only read the guarded table run
// through the wrapper with the raw driver's text, results and database (Harmless), and
// on the raw driver they leave accounts unchanged (they only read it).
func overRefusals(t *testing.T, b backend, es []entry) {
	for i := range es {
		es[i].class, es[i].want = "overrefusal", Harmless
	}
	runCatalogue(t, b, es)
	for _, e := range es {
		t.Run("reads_only/"+e.name, func(t *testing.T) {
			t.Parallel()
			d := freshDB(t, b, e)
			before := d.snap()
			raw, _ := d.open(false, nil)
			if r := run(d.ctx, raw, e); r.err != nil {
				t.Fatalf("ENTRY WRONG on the raw %s driver: %v", b.name, r.err)
			}
			if df := guardedDiff(before, d.snap()); df != "" {
				t.Errorf("it writes accounts on the raw %s driver:\n%s", b.name, indent(df))
			}
		})
	}
}

func TestOverRefusalPostgres(t *testing.T) {
	overRefusals(t, postgresBackend(), []entry{
		{name: "explain_update", steps: []step{q("EXPLAIN (COSTS off) UPDATE accounts SET balance = 0 WHERE id = 1")}},
		{name: "explain_analyze_false", steps: []step{q("EXPLAIN (ANALYZE false, COSTS off) DELETE FROM accounts WHERE id = 1")}},
		{name: "explain_analyze_off_insert", steps: []step{q("EXPLAIN (ANALYZE off, COSTS off) INSERT INTO accounts (id, balance) VALUES (9, 9)")}},
		{name: "merge_into_other_using_accounts", steps: []step{x("MERGE INTO ledger l USING accounts a ON l.account_id = a.id WHEN MATCHED THEN UPDATE SET amount = a.balance WHEN NOT MATCHED THEN DO NOTHING")}},
		{name: "merge_using_query_of_accounts", steps: []step{x("MERGE INTO ledger l USING (SELECT id, balance FROM accounts WHERE id > 3) a ON l.account_id = a.id WHEN NOT MATCHED THEN INSERT (id, account_id, amount) VALUES (a.id + 10, a.id, a.balance)")}},
		{name: "copy_query_to_stdout", dsn: "default_query_exec_mode=simple_protocol", steps: []step{x("COPY (SELECT id, balance FROM accounts ORDER BY id) TO STDOUT")}},
	})
}

func TestOverRefusalMariaDB(t *testing.T) {
	overRefusals(t, mysqlBackend(), []entry{
		{name: "explain_update", steps: []step{q("EXPLAIN UPDATE accounts SET balance = 0 WHERE id = 1")}},
		{name: "update_join_writes_other", steps: []step{x("UPDATE ledger l JOIN accounts a ON l.account_id = a.id SET l.amount = a.balance")}},
		{name: "update_join_using_alias_case", steps: []step{x("UPDATE ledger AS l INNER JOIN accounts AS a ON a.id = l.account_id SET l.amount = a.balance, l.note = 'x' WHERE a.id <= 2")}},
		{name: "update_comma_join_writes_other", steps: []step{x("UPDATE ledger, accounts SET ledger.amount = accounts.balance WHERE ledger.account_id = accounts.id")}},
		{name: "set_variable_from_accounts", steps: []step{x("SET @x = (SELECT balance FROM accounts WHERE id = 2)"), q("SELECT @x")}},
	})
}
