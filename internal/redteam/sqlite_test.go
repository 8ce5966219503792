package redteam

// SQLite has no dynamic SQL, stored procedures, TRUNCATE, MERGE or COPY: class 2 has no
// shapes here, class 1 has those SQLite has.
func sqliteEntries() []entry {
	one := func(class, name, sql string, want expect, args ...any) entry {
		return entry{class: class, name: name, steps: []step{s(sql, args...)}, want: want}
	}
	var es []entry

	// ---- 1: names a guarded table, neither a fenceable write nor a read.
	es = append(es,
		one(c1, "drop_table", "DROP TABLE accounts", Refused),
		one(c1, "drop_table_qualified", `DROP TABLE IF EXISTS main."accounts"`, Refused),
		one(c1, "rename_table", "ALTER TABLE accounts RENAME TO accounts_old", Refused),
		one(c1, "rename_column", "ALTER TABLE accounts RENAME COLUMN fence_token TO ft", Refused),
		one(c1, "add_column", "ALTER TABLE accounts ADD COLUMN extra INT DEFAULT 7", Refused),
		one(c1, "drop_column", "ALTER TABLE accounts DROP COLUMN version", Refused),
		one(c1, "create_table_as", "CREATE TABLE snap AS SELECT id, balance FROM accounts", Refused),
		entry{class: c1, name: "create_trigger_writes", want: Refused,
			steps: []step{x("CREATE TRIGGER wipe AFTER INSERT ON ledger BEGIN UPDATE accounts SET balance = 0; END")},
			then:  []string{"INSERT INTO ledger (id, account_id) VALUES (10, 1)"}},
		entry{class: c1, name: "create_trigger_on_guarded", want: Refused,
			steps: []step{x("CREATE TRIGGER bump AFTER UPDATE ON accounts BEGIN UPDATE ledger SET note = 'x'; END")}},
		one(c1, "create_view_over_guarded", "CREATE VIEW acc_v AS SELECT id, balance FROM accounts", Refused),
		one(c1, "replace_into", "REPLACE INTO accounts (id, balance) VALUES (1, 5)", Refused),
		one(c1, "insert_or_replace", "INSERT OR REPLACE INTO accounts (id, balance) VALUES (2, 5)", Refused),
		one(c1, "insert_or_ignore_new_row", "INSERT OR IGNORE INTO accounts (id, balance) VALUES (9, 9)", Refused),
		one(c1, "insert_or_fail", "INSERT OR FAIL INTO accounts (id, balance) VALUES (9, 9)", Refused),
		one(c1, "update_or_replace", "UPDATE OR REPLACE accounts SET balance = 0", Refused),
		one(c1, "update_or_ignore", "UPDATE OR IGNORE accounts SET balance = 0 WHERE id = 1", Refused),
		one(c1, "update_or_fail", "UPDATE OR FAIL accounts SET balance = 0 WHERE id = 1", Refused),
		one(c1, "insert_select", "INSERT INTO accounts (id, balance) SELECT id + 10, amount FROM ledger", Refused),
		one(c1, "with_insert_select", "WITH w AS (SELECT 9 AS id) INSERT INTO accounts (id, balance) SELECT id, 9 FROM w", Refused),
		one(c1, "insert_without_column_list", "INSERT INTO accounts VALUES (9, 9, 0, 0)", Refused),
		one(c1, "row_assignment_token", "UPDATE accounts SET (balance, fence_token) = (0, 0) WHERE id = 1", Refused),
		one(c1, "upsert_row_assignment_token", "INSERT INTO accounts (id, balance) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET (balance, fence_token) = (0, 0)", Refused),
	)

	// ---- 4: DELETE exactness.
	es = append(es,
		one(c4, "rowid_subquery", "DELETE FROM accounts WHERE rowid = (SELECT min(rowid) FROM accounts)", Exact),
		one(c4, "limited_self_subquery", "DELETE FROM accounts WHERE id IN (SELECT id FROM accounts ORDER BY balance LIMIT 2)", Exact),
		one(c4, "limited_self_subquery_offset", "DELETE FROM accounts WHERE id IN (SELECT id FROM accounts ORDER BY balance LIMIT 2 OFFSET 1)", Exact),
		one(c4, "random", "DELETE FROM accounts WHERE random() IS NOT NULL", Exact),
		one(c4, "randomblob", "DELETE FROM accounts WHERE length(randomblob(4)) = 4 AND id < 3", Exact),
		one(c4, "reads_version", "DELETE FROM accounts WHERE version = 3 AND id < 3", Exact),
		one(c4, "reads_token_quoted", `DELETE FROM accounts WHERE "fence_token" < 100`, Exact),
		one(c4, "self_aggregate_subquery", "DELETE FROM accounts WHERE balance > (SELECT avg(balance) FROM accounts)", Exact),
		one(c4, "returning", "DELETE FROM accounts WHERE id = 1 RETURNING id, balance", Exact),
		one(c4, "not_indexed", "DELETE FROM accounts NOT INDEXED WHERE id = 2", Exact),
	)

	// ---- 4, continued: selections that the fencing UPDATE changes without naming a
	// fencing column — an AFTER UPDATE trigger maintaining updated_at (a common
	// pattern), a view that renames version, changes() of the previous statement.
	es = append(es,
		entry{class: c4, name: "updated_at_trigger", want: Exact,
			setup: []string{
				"ALTER TABLE accounts ADD COLUMN updated_at TEXT NOT NULL DEFAULT '2020-01-01'",
				"CREATE TRIGGER touch AFTER UPDATE ON accounts BEGIN UPDATE accounts SET updated_at = '2030-01-01' WHERE id = NEW.id; END",
			},
			steps: []step{x("DELETE FROM accounts WHERE updated_at < '2021-01-01' AND id <= 2")}},
		entry{class: c4, name: "view_renaming_version_limited", want: Exact,
			setup: []string{"CREATE VIEW acc_v AS SELECT id, version AS v FROM accounts"},
			steps: []step{x("DELETE FROM accounts WHERE id = (SELECT id FROM acc_v ORDER BY v, id LIMIT 1)")}},
		entry{class: c4, name: "changes", want: Exact,
			steps: []step{x("UPDATE ledger SET note = note WHERE id = 1"), x("DELETE FROM accounts WHERE id > changes()")}},
	)

	// ---- 5: transaction control as SQL text.
	es = append(es,
		entry{class: c5, name: "begin_commit", want: Refused, steps: []step{
			x("BEGIN"), x("UPDATE accounts SET balance = 0 WHERE id = 1"), x("COMMIT")}},
		entry{class: c5, name: "begin_immediate_end", want: Refused, steps: []step{
			x("BEGIN IMMEDIATE TRANSACTION"), x("DELETE FROM accounts WHERE id = 2"), x("END TRANSACTION")}},
		entry{class: c5, name: "begin_unguarded_first", want: Refused, steps: []step{
			x("begin deferred"), x("UPDATE ledger SET note = 'x'"), x("INSERT INTO accounts (id, balance) VALUES (9, 9)"), x("commit")}},
		entry{class: c5, name: "begin_exclusive_end", want: Refused, steps: []step{
			x("BEGIN EXCLUSIVE"), x("INSERT INTO accounts (id, balance) VALUES (9, 9)"), x("END")}},
	)

	// ---- 7: every conflict clause of an upsert is fenced.
	withBalanceKey := []string{"CREATE UNIQUE INDEX accounts_balance ON accounts (balance)"}
	es = append(es,
		entry{class: c7, name: "second_clause_hit", want: Fenced, setup: withBalanceKey, steps: []step{x(
			"INSERT INTO accounts (id, balance) VALUES (9, 100) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance ON CONFLICT (balance) DO UPDATE SET balance = accounts.balance + 1")}},
		entry{class: c7, name: "first_do_nothing_second_update", want: Fenced, setup: withBalanceKey, steps: []step{x(
			"INSERT INTO accounts (id, balance) VALUES (9, 200) ON CONFLICT (id) DO NOTHING ON CONFLICT DO UPDATE SET balance = 7")}},
		entry{class: c7, name: "second_clause_no_target", want: Fenced, setup: withBalanceKey, steps: []step{x(
			"INSERT INTO accounts (id, balance) VALUES (9, 300) ON CONFLICT (id) DO UPDATE SET balance = 1 ON CONFLICT DO UPDATE SET balance = excluded.balance + 1")}},
		entry{class: c7, name: "first_clause_hit", want: Fenced, setup: withBalanceKey, steps: []step{x(
			"INSERT INTO accounts (id, balance) VALUES (1, 999) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance ON CONFLICT (balance) DO UPDATE SET balance = 0")}},
		entry{class: c7, name: "second_clause_mapped_token", want: Fenced, setup: withBalanceKey, steps: []step{x(
			"INSERT INTO accounts (id, balance, fence_token) VALUES (9, 400, 0) ON CONFLICT (id) DO NOTHING ON CONFLICT (balance) DO UPDATE SET balance = 1, fence_token = excluded.fence_token")}},
		entry{class: c7, name: "second_clause_where", want: Fenced, setup: withBalanceKey, steps: []step{x(
			"INSERT INTO accounts (id, balance) VALUES (9, 100) ON CONFLICT (id) DO NOTHING ON CONFLICT (balance) DO UPDATE SET balance = 5 WHERE excluded.balance > 0")}},
	)

	// ---- classic shapes.
	es = append(es,
		one(cC, "multi_statement_write_first", "UPDATE accounts SET balance = 0 WHERE id = 1; SELECT 1", Refused),
		one(cC, "multi_statement_write_second", "SELECT 1; DELETE FROM accounts", Refused),
		one(cC, "multi_statement_comment_hidden", "SELECT 1 /* ; */; UPDATE accounts SET balance = 0 -- ;", Refused),
		one(cC, "update", "UPDATE accounts SET balance = 0 WHERE id = 1", Fenced),
		one(cC, "update_all", "UPDATE accounts SET balance = balance + 1", Fenced),
		one(cC, "update_schema_qualified", `UPDATE main."accounts" SET balance = 0 WHERE id = 2`, Fenced),
		one(cC, "update_brackets", "UPDATE [accounts] SET balance = 0 WHERE id = 3", Fenced),
		one(cC, "update_backquotes", "UPDATE `accounts` SET balance = 0 WHERE id = 3", Fenced),
		one(cC, "update_string_identifier", "UPDATE 'accounts' SET balance = 0 WHERE id = 3", Fenced),
		one(cC, "update_upper_case_comments", "/* c */ UPDATE/**/ACCOUNTS SET balance = 0 -- x", Fenced),
		one(cC, "update_not_indexed", "UPDATE accounts NOT INDEXED SET balance = 0 WHERE id = 1", Fenced),
		one(cC, "update_from", "UPDATE accounts AS a SET balance = a.balance + l.amount FROM ledger l WHERE l.account_id = a.id", Fenced),
		one(cC, "update_returning", "UPDATE accounts SET balance = 5 WHERE id = 1 RETURNING *", Fenced),
		one(cC, "mapped_columns_update", "UPDATE accounts SET balance = 0, fence_token = 0, version = 0 WHERE id = 1", Fenced),
		one(cC, "mapped_columns_update_args", "UPDATE accounts SET fence_token = ?, balance = ? WHERE id = ?", Fenced, 0, 1, 2),
		one(cC, "mapped_columns_upsert",
			"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 999, 0) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance, fence_token = excluded.fence_token, version = excluded.version", Fenced),
		one(cC, "upsert", "INSERT INTO accounts (id, balance) VALUES (1, 7) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance", Fenced),
		one(cC, "upsert_multi_row", "INSERT INTO accounts (id, balance) VALUES (9, 9), (3, 3) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance", Fenced),
		one(cC, "delete", "DELETE FROM accounts WHERE id = 1", Fenced),
		one(cC, "delete_all", "DELETE FROM accounts", Fenced),
		one(cC, "no_token_update", "UPDATE accounts SET balance = 0", NoToken),
		one(cC, "no_token_delete", "DELETE FROM accounts WHERE id = 1", NoToken),
		one(cC, "no_token_insert", "INSERT INTO accounts (id, balance) VALUES (9, 9)", NoToken),
		one(cC, "no_token_upsert", "INSERT INTO accounts (id, balance) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET balance = 1", NoToken),
	)

	// ---- harmless.
	es = append(es,
		one(cH, "select_comments_spacing", "  SELECT   id ,balance/* accounts; UPDATE accounts */FROM  accounts -- ; DELETE\n WHERE id = ?", Harmless, 2),
		one(cH, "select_lower_case_all", "select * from accounts order by id", Harmless),
		one(cH, "select_string_with_write", "SELECT 'UPDATE accounts SET balance = 0; '' -- ' AS s, count(*) FROM accounts", Harmless),
		one(cH, "with_read", "WITH a AS (SELECT id FROM accounts WHERE balance > 150) SELECT count(*) FROM a", Harmless),
		one(cH, "values", "VALUES (1, 'accounts'), (2, 'x')", Harmless),
		one(cH, "write_unguarded", "UPDATE ledger SET note = 'accounts' WHERE id = 1", Harmless),
		one(cH, "write_unguarded_reading_guarded", "UPDATE ledger SET amount = 0 WHERE account_id IN (SELECT id FROM accounts WHERE balance > 150)", Harmless),
		one(cH, "delete_unguarded_reading_guarded", "DELETE FROM ledger WHERE account_id IN (SELECT id FROM accounts WHERE balance < 150)", Harmless),
		one(cH, "insert_unguarded_select_guarded", "INSERT INTO ledger (id, account_id, note) SELECT id + 100, id, 'copy' FROM accounts", Harmless),
		one(cH, "create_prefix_named_table", "CREATE TABLE accounts_archive (id BIGINT PRIMARY KEY, balance BIGINT)", Harmless),
		entry{class: cH, name: "write_prefix_named_table", want: Harmless,
			setup: []string{"CREATE TABLE accounts_archive (id BIGINT PRIMARY KEY, balance BIGINT)"},
			steps: []step{x("INSERT INTO accounts_archive (id, balance) VALUES (?, ?)", 1, 2), x("UPDATE accounts_archive SET balance = 3"), x("DROP TABLE accounts_archive")}},
		entry{class: cH, name: "savepoints_in_begintx", want: Harmless, tx: true, steps: []step{
			x("SAVEPOINT sp1"), x("UPDATE ledger SET note = 'a'"), x("ROLLBACK TO SAVEPOINT sp1"),
			x("INSERT INTO ledger (id, account_id) VALUES (20, 1)"), x("RELEASE SAVEPOINT sp1"), s("SELECT count(*) FROM accounts")}},
		one(cH, "pragma_unrelated", "PRAGMA cache_size = 500", Harmless),
		one(cH, "pragma_table_info", "PRAGMA table_info(accounts)", Harmless),
	)
	return es
}
