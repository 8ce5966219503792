package redteam

import (
	"io"
	"strings"

	"github.com/go-sql-driver/mysql"
)

func init() {
	// LOAD DATA LOCAL INFILE 'Reader::redteam' reads these rows.
	mysql.RegisterReaderHandler("redteam", func() io.Reader { return strings.NewReader("9\t9\n1\t1\n") })
}

func mysqlEntries() []entry {
	one := func(class, name, sql string, want expect, args ...any) entry {
		return entry{class: class, name: name, steps: []step{s(sql, args...)}, want: want}
	}
	var es []entry

	// ---- 1: names a guarded table, neither a fenceable write nor a read.
	es = append(es,
		one(c1, "set_statement_for_update", "SET STATEMENT max_statement_time = 100 FOR UPDATE accounts SET balance = 0", Refused),
		one(c1, "set_statement_for_delete", "SET STATEMENT sql_mode = '' FOR DELETE FROM accounts WHERE id = 1", Refused),
		one(c1, "set_statement_for_insert", "set statement lock_wait_timeout=5 for insert into accounts (id, balance) values (9, 9)", Refused),
		one(c1, "begin_not_atomic", "BEGIN NOT ATOMIC UPDATE accounts SET balance = 0; END", Refused),
		one(c1, "compound_if_hidden_name", "IF 1 THEN EXECUTE IMMEDIATE CONCAT('DELETE FROM acc', 'ounts WHERE id = 3'); END IF", Refused),
		one(c1, "compound_while", "WHILE (SELECT count(*) FROM accounts) > 1 DO DELETE FROM accounts LIMIT 1; END WHILE", Refused),
		one(c1, "compound_case_hidden_name", "CASE WHEN 1 THEN EXECUTE IMMEDIATE CONCAT('UPDATE acc', 'ounts SET balance = 0'); END CASE", Refused),
		one(c1, "begin_not_atomic_hidden_name", "BEGIN NOT ATOMIC DECLARE t VARCHAR(20) DEFAULT 'acc'; EXECUTE IMMEDIATE CONCAT('UPDATE ', t, 'ounts SET balance = 0'); END", Refused),
		one(c1, "create_table_select", "CREATE TABLE snap AS SELECT id, balance FROM accounts", Refused),
		one(c1, "alter_modify_drop_not_null", "ALTER TABLE accounts MODIFY fence_token BIGINT NULL", Refused),
		entry{class: c1, name: "drop_not_null_after_schema_check_cached", want: Refused, steps: []step{
			x("UPDATE accounts SET balance = balance WHERE id = 999"),
			x("ALTER TABLE accounts MODIFY fence_token BIGINT NULL"),
			x("UPDATE accounts SET balance = 0 WHERE id = 1"),
		}},
		one(c1, "alter_change_type", "ALTER TABLE accounts MODIFY balance VARCHAR(20) NOT NULL", Refused),
		one(c1, "alter_change_column", "ALTER TABLE `accounts` CHANGE version ver BIGINT NOT NULL DEFAULT 0", Refused),
		one(c1, "alter_engine_myisam", "ALTER TABLE accounts ENGINE=MyISAM", Refused),
		one(c1, "drop_table", "DROP TABLE accounts", Refused),
		one(c1, "drop_table_if_exists_list", "DROP TABLE IF EXISTS ledger, accounts", Refused),
		one(c1, "rename_table", "RENAME TABLE accounts TO accounts_old", Refused),
		one(c1, "alter_rename", "ALTER TABLE accounts RENAME TO accounts_old", Refused),
		entry{class: c1, name: "create_trigger_writes", want: Refused,
			steps: []step{x("CREATE TRIGGER wipe AFTER INSERT ON ledger FOR EACH ROW UPDATE accounts SET balance = 0")},
			then:  []string{"INSERT INTO ledger (id, account_id) VALUES (10, 1)"}},
		entry{class: c1, name: "create_trigger_compound_body", want: Refused,
			steps: []step{x("CREATE TRIGGER wipe BEFORE UPDATE ON ledger FOR EACH ROW BEGIN DELETE FROM accounts WHERE id = NEW.account_id; END")},
			then:  []string{"UPDATE ledger SET note = 'x' WHERE id = 1"}},
		entry{class: c1, name: "create_trigger_on_guarded", want: Refused,
			steps: []step{x("CREATE TRIGGER bump BEFORE UPDATE ON accounts FOR EACH ROW SET NEW.balance = NEW.balance + 1000")}},
		entry{class: c1, name: "create_procedure_single_statement", want: Refused,
			steps: []step{x("CREATE PROCEDURE wipe() UPDATE accounts SET balance = 0")},
			then:  []string{"CALL wipe()"}},
		entry{class: c1, name: "create_procedure_compound", want: Refused,
			steps: []step{x("CREATE PROCEDURE wipe() BEGIN DELETE FROM accounts; END")},
			then:  []string{"CALL wipe()"}},
		entry{class: c1, name: "create_function_writes", want: Refused,
			steps: []step{x("CREATE FUNCTION wipe() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE accounts SET balance = 0; RETURN 1; END")},
			then:  []string{"SELECT wipe()"}},
		entry{class: c1, name: "create_view_over_guarded", want: Refused,
			steps: []step{x("CREATE VIEW acc_v AS SELECT id, balance FROM accounts")},
			then:  []string{"UPDATE acc_v SET balance = 0"}},
		entry{class: c1, name: "create_event_writes", want: Refused,
			steps: []step{x("CREATE EVENT wipe ON SCHEDULE AT CURRENT_TIMESTAMP + INTERVAL 1 HOUR DO UPDATE accounts SET balance = 0")}},
		one(c1, "truncate", "TRUNCATE accounts", Refused),
		one(c1, "truncate_table", "TRUNCATE TABLE `accounts`", Refused),
		one(c1, "load_data_local", "LOAD DATA LOCAL INFILE 'Reader::redteam' INTO TABLE accounts (id, balance)", Refused),
		one(c1, "load_data_local_replace", "LOAD DATA LOCAL INFILE 'Reader::redteam' REPLACE INTO TABLE accounts (id, balance)", Refused),
		one(c1, "replace_into", "REPLACE INTO accounts (id, balance) VALUES (1, 5)", Refused),
		one(c1, "replace_set", "REPLACE accounts SET id = 2, balance = 5", Refused),
		one(c1, "replace_select", "REPLACE INTO accounts (id, balance) SELECT account_id, amount FROM ledger", Refused),
		one(c1, "insert_ignore", "INSERT IGNORE INTO accounts (id, balance) VALUES (9, 9)", Refused),
		one(c1, "update_ignore", "UPDATE IGNORE accounts SET balance = 0", Refused),
		one(c1, "delete_ignore", "DELETE IGNORE FROM accounts WHERE id = 1", Refused),
		one(c1, "insert_select", "INSERT INTO accounts (id, balance) SELECT id + 10, amount FROM ledger", Refused),
		one(c1, "insert_without_column_list", "INSERT INTO accounts VALUES (9, 9, 0, 0)", Refused),
		one(c1, "multi_table_update_join", "UPDATE accounts a JOIN ledger l ON l.account_id = a.id SET a.balance = 0", Refused),
		one(c1, "multi_table_update_comma", "UPDATE ledger, accounts SET accounts.balance = 0 WHERE accounts.id = ledger.account_id", Refused),
		one(c1, "multi_table_delete", "DELETE accounts FROM accounts JOIN ledger ON ledger.account_id = accounts.id", Refused),
		one(c1, "multi_table_delete_using", "DELETE FROM accounts USING accounts JOIN ledger ON ledger.account_id = accounts.id", Refused),
		one(c1, "analyze_update", "ANALYZE UPDATE accounts SET balance = 7 WHERE id = 4", Refused),
		one(c1, "analyze_delete", "ANALYZE FORMAT=JSON DELETE FROM accounts WHERE id = 4", Refused),
		one(c1, "executable_comment_whole", "/*!UPDATE accounts SET balance = 0 */", Refused),
		one(c1, "executable_comment_table", "UPDATE /*!50000 accounts */ SET balance = 0", Refused),
		one(c1, "executable_comment_mariadb", "/*M! DELETE FROM accounts */", Refused),
	)

	// ---- 2: dynamic SQL.
	es = append(es,
		one(c2, "execute_immediate", "EXECUTE IMMEDIATE 'UPDATE accounts SET balance = 0'", Refused),
		one(c2, "execute_immediate_concat", "EXECUTE IMMEDIATE CONCAT('DELETE FROM acc', 'ounts')", Refused),
		one(c2, "execute_immediate_using", "EXECUTE IMMEDIATE 'UPDATE accounts SET balance = ?' USING 0", Refused),
		entry{class: c2, name: "prepare_from_var_execute", want: Refused, steps: []step{
			x("SET @q = CONCAT('UPDATE acc', 'ounts SET balance = 0')"), x("PREPARE s FROM @q"), x("EXECUTE s")}},
		entry{class: c2, name: "prepare_from_literal_execute", want: Refused, steps: []step{
			x("PREPARE s FROM 'DELETE FROM accounts WHERE id = ?'"), x("SET @id = 1"), x("EXECUTE s USING @id")}},
		entry{class: c2, name: "prepare_from_var_named", want: Refused, steps: []step{
			x("SET @q = 'UPDATE accounts SET balance = 0'"), x("PREPARE s FROM @q"), x("EXECUTE s")}},
		entry{class: c2, name: "call_procedure", want: Refused,
			setup: []string{"CREATE PROCEDURE wipe() UPDATE accounts SET balance = 0"},
			steps: []step{x("CALL wipe()")}},
		entry{class: c2, name: "call_procedure_dynamic", want: Refused,
			setup: []string{"CREATE PROCEDURE wipe(t VARCHAR(64)) BEGIN EXECUTE IMMEDIATE CONCAT('DELETE FROM ', t); END"},
			steps: []step{x("CALL wipe(?)", "accounts")}},
		entry{class: c2, name: "do_function", want: Refused,
			setup: []string{"CREATE FUNCTION wipe() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE accounts SET balance = 0; RETURN 1; END"},
			steps: []step{x("DO wipe()")}},
	)

	// ---- 4: DELETE exactness.
	es = append(es,
		one(c4, "limited_self_subquery", "DELETE FROM accounts WHERE id IN (SELECT id FROM (SELECT id FROM accounts ORDER BY balance LIMIT 2) x)", Exact),
		one(c4, "self_subquery_min", "DELETE FROM accounts WHERE id = (SELECT min(id) FROM accounts)", Exact),
		one(c4, "self_aggregate_subquery", "DELETE FROM accounts WHERE balance > (SELECT avg(balance) FROM accounts)", Exact),
		one(c4, "order_by_limit", "DELETE FROM accounts ORDER BY balance DESC LIMIT 2", Exact),
		one(c4, "where_order_by_limit", "DELETE FROM accounts WHERE balance > 100 ORDER BY id LIMIT 1", Exact),
		one(c4, "rand", "DELETE FROM accounts WHERE rand() < 2", Exact),
		one(c4, "uuid", "DELETE FROM accounts WHERE uuid() IS NOT NULL AND id < 3", Exact),
		one(c4, "sysdate", "DELETE FROM accounts WHERE sysdate() > '2000-01-01'", Exact),
		one(c4, "reads_version", "DELETE FROM accounts WHERE version = 3 AND id < 3", Exact),
		one(c4, "reads_token_backquoted", "DELETE FROM accounts WHERE `fence_token` < 100", Exact),
		one(c4, "returning_outside_tx", "DELETE FROM accounts WHERE id = 1 RETURNING id, balance", Exact),
	)

	// ---- 4, continued: selections that the fencing UPDATE changes without naming a
	// fencing column — ON UPDATE CURRENT_TIMESTAMP (a common pattern), a view that
	// renames version, ROW_COUNT() of the previous statement.
	touch := []string{"ALTER TABLE accounts ADD COLUMN updated_at TIMESTAMP NOT NULL DEFAULT '2020-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP"}
	es = append(es,
		entry{class: c4, name: "on_update_current_timestamp", want: Exact, setup: touch,
			steps: []step{x("DELETE FROM accounts WHERE updated_at < '2021-01-01' AND id <= 2")}},
		entry{class: c4, name: "claim_on_update_current_timestamp", want: Claim, setup: touch,
			steps: []step{s("SELECT id, balance FROM accounts WHERE updated_at < '2021-01-01' AND id <= 2 FOR UPDATE")}},
		// A read-only view (DISTINCT): an updatable one is a door the lazy check
		// refuses (ErrSchema), whatever the statement.
		entry{class: c4, name: "view_renaming_version_limited", want: Exact,
			setup: []string{"CREATE VIEW acc_v AS SELECT DISTINCT id, version AS v FROM accounts"},
			steps: []step{x("DELETE FROM accounts WHERE id = (SELECT id FROM acc_v ORDER BY v, id LIMIT 1)")}},
		entry{class: c4, name: "row_count", want: Exact,
			steps: []step{s("SELECT 1"), x("DELETE FROM accounts WHERE id > ROW_COUNT() + 2")}},
	)

	// ---- 5: transaction control as SQL text.
	es = append(es,
		entry{class: c5, name: "start_transaction_commit", want: Refused, steps: []step{
			x("START TRANSACTION"), x("UPDATE accounts SET balance = 0 WHERE id = 1"), x("COMMIT")}},
		entry{class: c5, name: "begin_commit", want: Refused, steps: []step{
			x("BEGIN"), x("DELETE FROM accounts WHERE id = 2"), x("COMMIT")}},
		entry{class: c5, name: "begin_work_unguarded_first", want: Refused, steps: []step{
			x("begin work"), x("UPDATE ledger SET note = 'x'"), x("INSERT INTO accounts (id, balance) VALUES (9, 9)"), x("commit work")}},
		entry{class: c5, name: "set_autocommit_0", want: Refused, steps: []step{
			x("SET autocommit = 0"), x("UPDATE accounts SET balance = 0 WHERE id = 1"), x("COMMIT")}},
		entry{class: c5, name: "set_session_autocommit_off", want: Refused, steps: []step{
			x("SET @@session.autocommit = OFF"), x("INSERT INTO accounts (id, balance) VALUES (9, 9)"), x("COMMIT")}},
		entry{class: c5, name: "start_transaction_read_write", want: Refused, steps: []step{
			x("START TRANSACTION READ WRITE, WITH CONSISTENT SNAPSHOT"), x("INSERT INTO accounts (id, balance) VALUES (9, 9)"), x("COMMIT")}},
		entry{class: c5, name: "commit_inside_begintx", want: Refused, tx: true, steps: []step{
			x("INSERT INTO accounts (id, balance) VALUES (9, 9)"), x("COMMIT"), x("INSERT INTO accounts (id, balance) VALUES (10, 10)")}},
		entry{class: c5, name: "xa_transaction", want: Refused, steps: []step{
			x("XA START 'rt'"), x("INSERT INTO accounts (id, balance) VALUES (9, 9)"), x("XA END 'rt'"), x("XA COMMIT 'rt' ONE PHASE")}},
	)

	// ---- classic shapes.
	es = append(es,
		one(cC, "multi_statement_write_first", "UPDATE accounts SET balance = 0 WHERE id = 1; SELECT 1", Refused),
		one(cC, "multi_statement_write_second", "SELECT 1; DELETE FROM accounts", Refused),
		one(cC, "multi_statement_hash_comment", "SELECT 1 # ;\n; UPDATE accounts SET balance = 0", Refused),
		one(cC, "multi_statement_backslash_string", `SELECT 'a\';'; UPDATE accounts SET balance = 0`, Refused),
		one(cC, "update", "UPDATE accounts SET balance = 0 WHERE id = 1", Fenced),
		one(cC, "update_all", "UPDATE accounts SET balance = balance + 1", Fenced),
		one(cC, "update_backquoted_comments", "/* c */ UPDATE/**/`accounts` SET balance = 0 # x", Fenced),
		one(cC, "update_order_by_limit", "UPDATE accounts SET balance = 0 ORDER BY balance DESC LIMIT 2", Fenced),
		one(cC, "update_args", "UPDATE accounts SET balance = ? WHERE id = ?", Fenced, 5, 3),
		one(cC, "mapped_columns_update", "UPDATE accounts SET balance = 0, fence_token = 0, version = 0 WHERE id = 1", Fenced),
		one(cC, "mapped_columns_update_args", "UPDATE accounts SET fence_token = ?, balance = ? WHERE id = ?", Fenced, 0, 1, 2),
		one(cC, "mapped_columns_upsert",
			"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 999, 0) ON DUPLICATE KEY UPDATE balance = VALUES(balance), fence_token = VALUES(fence_token), version = VALUES(version)", Fenced),
		one(cC, "upsert_set_form", "INSERT INTO accounts SET id = 1, balance = 9 ON DUPLICATE KEY UPDATE balance = 9", Fenced),
		one(cC, "upsert", "INSERT INTO accounts (id, balance) VALUES (1, 7) ON DUPLICATE KEY UPDATE balance = VALUES(balance)", Fenced),
		one(cC, "upsert_multi_row", "INSERT INTO accounts (id, balance) VALUES (9, 9), (3, 3) ON DUPLICATE KEY UPDATE balance = balance + 1", Fenced),
		one(cC, "delete", "DELETE FROM accounts WHERE id = 1", Fenced),
		one(cC, "delete_all", "DELETE FROM accounts", Fenced),
		one(cC, "claim_for_update", "SELECT id, balance FROM accounts WHERE id = 1 FOR UPDATE", Claim),
		one(cC, "claim_for_update_ordered", "SELECT * FROM accounts ORDER BY balance DESC LIMIT 2 FOR UPDATE", Claim),
		one(cC, "no_token_update", "UPDATE accounts SET balance = 0", NoToken),
		one(cC, "no_token_delete", "DELETE FROM accounts WHERE id = 1", NoToken),
		one(cC, "no_token_insert", "INSERT INTO accounts (id, balance) VALUES (9, 9)", NoToken),
		one(cC, "no_token_upsert", "INSERT INTO accounts (id, balance) VALUES (1, 1) ON DUPLICATE KEY UPDATE balance = 1", NoToken),
	)

	// ---- harmless.
	es = append(es,
		one(cH, "select_comments_spacing", "  SELECT   id ,balance/* accounts; UPDATE accounts */FROM  accounts -- ; DELETE\n WHERE id = ? # x", Harmless, 2),
		one(cH, "select_lower_case_all", "select * from accounts order by id", Harmless),
		one(cH, "select_string_with_write", `SELECT 'UPDATE accounts SET balance = 0; \' -- ' AS s, count(*) FROM accounts`, Harmless),
		one(cH, "with_read", "WITH a AS (SELECT id FROM accounts WHERE balance > 150) SELECT count(*) FROM a", Harmless),
		one(cC, "claim_lock_in_share_mode", "SELECT id FROM accounts WHERE id = 1 LOCK IN SHARE MODE", Claim),
		entry{class: cH, name: "for_update_without_token", want: Harmless, noTok: true,
			steps: []step{s("SELECT id, balance FROM accounts WHERE id <= 2 FOR UPDATE")}},
		one(cH, "write_unguarded", "UPDATE ledger SET note = 'accounts' WHERE id = 1", Harmless),
		one(cH, "write_unguarded_reading_guarded", "UPDATE ledger SET amount = 0 WHERE account_id IN (SELECT id FROM accounts WHERE balance > 150)", Harmless),
		one(cH, "delete_unguarded_reading_guarded", "DELETE FROM ledger WHERE account_id IN (SELECT id FROM accounts WHERE balance < 150)", Harmless),
		one(cH, "insert_unguarded_select_guarded", "INSERT INTO ledger (id, account_id, note) SELECT id + 100, id, 'copy' FROM accounts", Harmless),
		one(cH, "create_prefix_named_table", "CREATE TABLE accounts_archive (id BIGINT PRIMARY KEY, balance BIGINT) ENGINE=InnoDB", Harmless),
		entry{class: cH, name: "write_prefix_named_table", want: Harmless,
			setup: []string{"CREATE TABLE accounts_archive (id BIGINT PRIMARY KEY, balance BIGINT) ENGINE=InnoDB"},
			steps: []step{x("INSERT INTO accounts_archive (id, balance) VALUES (?, ?)", 1, 2), x("UPDATE accounts_archive SET balance = 3"), x("DROP TABLE accounts_archive")}},
		entry{class: cH, name: "savepoints_in_begintx", want: Harmless, tx: true, steps: []step{
			x("SAVEPOINT sp1"), x("UPDATE ledger SET note = 'a'"), x("ROLLBACK TO SAVEPOINT sp1"),
			x("INSERT INTO ledger (id, account_id) VALUES (20, 1)"), x("RELEASE SAVEPOINT sp1"), s("SELECT count(*) FROM accounts")}},
		one(cH, "set_user_variable", "SET @redteam = 42", Harmless),
		one(cH, "set_unrelated_session_variable", "SET SESSION max_statement_time = 30", Harmless),
		one(cH, "show_variables", "SHOW SESSION VARIABLES LIKE 'autocommit'", Harmless),
		one(cH, "show_columns", "SHOW COLUMNS FROM accounts", Harmless),
	)
	return es
}
