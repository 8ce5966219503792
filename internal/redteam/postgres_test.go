package redteam

// Class names, shared by the three dialects' catalogues.
const (
	c1 = "1_not_a_write"      // names a guarded table, neither a fenceable write nor a read
	c2 = "2_dynamic_sql"      // SQL the wrapper cannot see
	c4 = "4_delete_exactness" // the two-step DELETE must delete what the raw one deletes
	c5 = "5_text_tx"          // transaction control sent as SQL
	c6 = "6_pgx_simple"       // pgx simple protocol / exec mode
	c7 = "7_upsert_clauses"   // every ON CONFLICT clause fenced
	cC = "classic"            // multi-statement strings, UPDATE … FROM, mapped columns, claims, …
	cH = "harmless"           // must behave byte-for-byte like the raw driver
)

// pgZeroFn is a SQL function that writes accounts, created on the raw driver.
const pgZeroFn = "CREATE FUNCTION zero_all() RETURNS bigint LANGUAGE sql AS $$ UPDATE accounts SET balance = 0 RETURNING 1 $$"

func postgresEntries() []entry {
	one := func(class, name, sql string, want expect, args ...any) entry {
		return entry{class: class, name: name, steps: []step{s(sql, args...)}, want: want}
	}
	var es []entry

	// ---- 1: names a guarded table, neither a fenceable write nor a read.
	es = append(es,
		one(c1, "create_table_as_writing_cte",
			"CREATE TABLE snap AS WITH w AS (UPDATE accounts SET balance = 0 RETURNING id) SELECT id FROM w", Refused),
		one(c1, "create_table_as_writing_cte_delete",
			"CREATE TABLE snap AS WITH w AS (DELETE FROM accounts WHERE id > 2 RETURNING id) SELECT id FROM w", Refused),
		one(c1, "select_into_writing_cte",
			"WITH w AS (UPDATE accounts SET balance = 1 RETURNING id) SELECT id INTO snap FROM w", Refused),
		one(c1, "alter_type_using",
			"ALTER TABLE accounts ALTER COLUMN balance TYPE numeric USING balance * 2", Refused),
		one(c1, "alter_type_using_token",
			"ALTER TABLE accounts ALTER COLUMN fence_token TYPE bigint USING 0", Refused),
		one(c1, "alter_drop_not_null",
			"ALTER TABLE accounts ALTER COLUMN fence_token DROP NOT NULL", Refused),
		entry{class: c1, name: "drop_not_null_after_schema_check_cached", want: Refused, steps: []step{
			x("UPDATE accounts SET balance = balance WHERE id = 999"), // a guarded write: schema checked and cached
			x("ALTER TABLE accounts ALTER COLUMN fence_token DROP NOT NULL"),
			x("UPDATE accounts SET balance = 0 WHERE id = 1"),
		}},
		one(c1, "alter_add_column_default", "ALTER TABLE accounts ADD COLUMN extra int DEFAULT 7", Refused),
		one(c1, "alter_set_default", "ALTER TABLE public.accounts ALTER COLUMN version SET DEFAULT 9", Refused),
		one(c1, "drop_table", "DROP TABLE accounts", Refused),
		one(c1, "drop_table_quoted_qualified", `DROP TABLE IF EXISTS "public"."accounts" CASCADE`, Refused),
		one(c1, "rename_table", "ALTER TABLE accounts RENAME TO accounts_old", Refused),
		one(c1, "rename_column", "ALTER TABLE accounts RENAME COLUMN fence_token TO ft", Refused),
		entry{class: c1, name: "create_rule_writes", want: Refused,
			steps: []step{x("CREATE RULE wipe AS ON INSERT TO ledger DO ALSO UPDATE accounts SET balance = 0")},
			then:  []string{"INSERT INTO ledger (id, account_id) VALUES (10, 1)"}},
		entry{class: c1, name: "create_rule_instead_quoted", want: Refused,
			steps: []step{x(`CREATE RULE wipe AS ON UPDATE TO ledger DO INSTEAD DELETE FROM "accounts"`)},
			then:  []string{"UPDATE ledger SET note = 'x' WHERE id = 1"}},
		entry{class: c1, name: "create_trigger_function_body_writes", want: Refused,
			steps: []step{x("CREATE FUNCTION wipe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE accounts SET balance = 0; RETURN NEW; END $$")},
			then: []string{
				"CREATE TRIGGER wipe AFTER INSERT ON ledger FOR EACH ROW EXECUTE FUNCTION wipe()",
				"INSERT INTO ledger (id, account_id) VALUES (10, 1)",
			}},
		entry{class: c1, name: "create_trigger_on_guarded", want: Refused,
			setup: []string{"CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.balance := NEW.balance + 1000; RETURN NEW; END $$"},
			steps: []step{x("CREATE TRIGGER bump BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION bump()")}},
		entry{class: c1, name: "create_view_over_guarded", want: Refused,
			steps: []step{x("CREATE VIEW acc_v AS SELECT id, balance FROM accounts")},
			then:  []string{"UPDATE acc_v SET balance = 0"}},
		entry{class: c1, name: "create_function_sql_body", want: Refused,
			steps: []step{x(pgZeroFn)},
			then:  []string{"SELECT zero_all()"}},
		entry{class: c1, name: "create_procedure_begin_atomic", want: Refused,
			steps: []step{x("CREATE PROCEDURE wipe() LANGUAGE sql BEGIN ATOMIC UPDATE accounts SET balance = 0; END")},
			then:  []string{"CALL wipe()"}},
		entry{class: c1, name: "create_procedure_dollar_body", want: Refused,
			steps: []step{x("CREATE PROCEDURE wipe() LANGUAGE plpgsql AS $body$ BEGIN DELETE FROM accounts; END $body$")},
			then:  []string{"CALL wipe()"}},
		one(c1, "truncate", "TRUNCATE accounts", Refused),
		one(c1, "truncate_table_only_cascade", "TRUNCATE TABLE ONLY accounts RESTART IDENTITY CASCADE", Refused),
		one(c1, "copy_from_program", `COPY accounts (id, balance) FROM PROGRAM 'printf "9,9\n"' WITH (FORMAT csv)`, Refused),
		one(c1, "merge_update", "MERGE INTO accounts a USING (VALUES (1)) v(id) ON a.id = v.id WHEN MATCHED THEN UPDATE SET balance = 0", Refused),
		one(c1, "merge_delete", "MERGE INTO accounts AS a USING ledger l ON a.id = l.account_id WHEN MATCHED THEN DELETE", Refused),
		one(c1, "merge_insert", "MERGE INTO accounts a USING (VALUES (9, 9)) v(id, b) ON a.id = v.id WHEN NOT MATCHED THEN INSERT (id, balance) VALUES (v.id, v.b)", Refused),
		one(c1, "explain_analyze_update", "EXPLAIN (ANALYZE, COSTS OFF) UPDATE accounts SET balance = 0", Refused),
		one(c1, "explain_analyze_delete", "EXPLAIN ANALYZE DELETE FROM accounts WHERE id = 1", Refused),
		one(c1, "writing_cte_select", "WITH w AS (UPDATE accounts SET balance = 0 RETURNING id) SELECT count(*) FROM w", Refused),
		one(c1, "writing_cte_delete_select", "WITH w AS (DELETE FROM accounts RETURNING id) SELECT id FROM w", Refused),
		one(c1, "writing_cte_under_unguarded_update",
			"WITH w AS (UPDATE accounts SET balance = 0 RETURNING id) UPDATE ledger SET note = 'x' WHERE account_id IN (SELECT id FROM w)", Refused),
		one(c1, "insert_select", "INSERT INTO accounts (id, balance) SELECT id + 10, amount FROM ledger", Refused),
		one(c1, "insert_without_column_list", "INSERT INTO accounts VALUES (9, 9, 0, 0)", Refused),
		one(c1, "row_assignment_token", "UPDATE accounts SET (balance, fence_token) = (0, 0) WHERE id = 1", Refused),
		one(c1, "unicode_escaped_name", `UPDATE U&"\0061ccounts" SET balance = 0`, Refused),
	)

	// ---- 2: dynamic SQL.
	es = append(es,
		one(c2, "do_block_names_guard", "DO $$ BEGIN UPDATE accounts SET balance = 0; END $$", Refused),
		one(c2, "do_block_hidden_name", "DO $$ BEGIN EXECUTE 'UPDATE acc' || 'ounts SET balance = 0'; END $$", Refused),
		one(c2, "do_block_language", "DO LANGUAGE plpgsql $x$ BEGIN EXECUTE format('DELETE FROM %I', 'acc' || 'ounts'); END $x$", Refused),
		entry{class: c2, name: "prepare_as_execute", want: Refused, steps: []step{
			x("PREPARE wipe AS UPDATE accounts SET balance = 0"), x("EXECUTE wipe")}},
		entry{class: c2, name: "prepare_as_param_execute", want: Refused, steps: []step{
			x("PREPARE wipe (bigint) AS DELETE FROM accounts WHERE id = $1"), x("EXECUTE wipe (1)")}},
		entry{class: c2, name: "prepare_hidden_execute", want: Refused, setup: []string{pgZeroFn}, steps: []step{
			x("PREPARE wipe AS SELECT zero_all()"), x("EXECUTE wipe")}},
		entry{class: c2, name: "call_procedure", want: Refused,
			setup: []string{"CREATE PROCEDURE wipe() LANGUAGE sql AS $$ UPDATE accounts SET balance = 0 $$"},
			steps: []step{x("CALL wipe()")}},
		entry{class: c2, name: "call_procedure_dynamic", want: Refused,
			setup: []string{"CREATE PROCEDURE wipe(t text) LANGUAGE plpgsql AS $$ BEGIN EXECUTE format('DELETE FROM %I', t); END $$"},
			steps: []step{x("CALL wipe($1)", "accounts")}},
	)

	// ---- 4: DELETE exactness (refused, or fenced and exact with a fresh token).
	es = append(es,
		one(c4, "ctid_subquery", "DELETE FROM accounts WHERE ctid = (SELECT min(ctid) FROM accounts)", Exact),
		one(c4, "ctid_literal", "DELETE FROM accounts WHERE ctid = '(0,1)'", Exact),
		one(c4, "xmin", "DELETE FROM accounts WHERE xmin::text::bigint > 0", Exact),
		one(c4, "limited_self_subquery", "DELETE FROM accounts WHERE id IN (SELECT id FROM accounts ORDER BY balance LIMIT 2)", Exact),
		one(c4, "limited_self_subquery_offset", "DELETE FROM accounts WHERE id IN (SELECT id FROM accounts ORDER BY balance LIMIT 2 OFFSET 1)", Exact),
		one(c4, "self_subquery_fetch_first", "DELETE FROM accounts WHERE id = (SELECT id FROM accounts ORDER BY balance DESC FETCH FIRST 1 ROWS ONLY)", Exact),
		one(c4, "random", "DELETE FROM accounts WHERE random() < 2", Exact),
		one(c4, "clock_timestamp", "DELETE FROM accounts WHERE clock_timestamp() > '2000-01-01'", Exact),
		one(c4, "gen_random_uuid", "DELETE FROM accounts WHERE gen_random_uuid() IS NOT NULL AND id < 3", Exact),
		one(c4, "reads_version", "DELETE FROM accounts WHERE version = 3 AND id < 3", Exact),
		one(c4, "reads_token", "DELETE FROM accounts WHERE fence_token < 100", Exact),
		one(c4, "self_aggregate_subquery", "DELETE FROM accounts WHERE balance > (SELECT avg(balance) FROM accounts)", Exact),
		entry{class: c4, name: "only_with_inheritance_child", want: Exact,
			setup: []string{
				"CREATE TABLE accounts_child (note text) INHERITS (accounts)",
				"INSERT INTO accounts_child (id, balance, fence_token, version, note) VALUES (11, 250, 50, 3, 'c'), (12, 50, 50, 3, 'd')",
			},
			steps: []step{x("DELETE FROM ONLY accounts WHERE balance >= 200")}},
		entry{class: c4, name: "parent_with_inheritance_child", want: Exact,
			setup: []string{
				"CREATE TABLE accounts_child (note text) INHERITS (accounts)",
				"INSERT INTO accounts_child (id, balance, fence_token, version, note) VALUES (11, 250, 50, 3, 'c'), (12, 50, 50, 3, 'd')",
			},
			steps: []step{x("DELETE FROM accounts WHERE balance >= 200")}},
		entry{class: c4, name: "only_with_child_fresh_child_tokens", want: Exact,
			setup: []string{
				"CREATE TABLE accounts_child (note text) INHERITS (accounts)",
				"INSERT INTO accounts_child (id, balance, fence_token, version, note) VALUES (11, 250, 5, 3, 'c')",
			},
			steps: []step{x("DELETE FROM ONLY accounts WHERE balance = 250 OR id = 1")}},
		one(c4, "returning_outside_tx", "DELETE FROM accounts WHERE id = 1 RETURNING id, balance", Exact),
		one(c4, "using_join", "DELETE FROM accounts USING ledger WHERE ledger.account_id = accounts.id", Exact),
	)

	// ---- 4, continued: selections that the fencing UPDATE changes without naming a
	// fencing column — a BEFORE UPDATE trigger maintaining updated_at (a common
	// pattern), a view that renames version, a per-statement clock.
	touch := []string{
		"ALTER TABLE accounts ADD COLUMN updated_at timestamptz NOT NULL DEFAULT '2020-01-01 00:00:00+00'",
		"CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated_at := '2030-01-01 00:00:00+00'; RETURN NEW; END $$",
		"CREATE TRIGGER touch BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION touch()",
	}
	es = append(es,
		entry{class: c4, name: "updated_at_trigger", want: Exact, setup: touch,
			steps: []step{x("DELETE FROM accounts WHERE updated_at < '2021-01-01' AND id <= 2")}},
		entry{class: c4, name: "claim_updated_at_trigger", want: Claim, setup: touch,
			steps: []step{s("SELECT id, balance FROM accounts WHERE updated_at < '2021-01-01' AND id <= 2 FOR UPDATE")}},
		// A read-only view (DISTINCT): an updatable one is a door the lazy check
		// refuses (ErrSchema), whatever the statement.
		entry{class: c4, name: "view_renaming_version_limited", want: Exact,
			setup: []string{"CREATE VIEW acc_v AS SELECT DISTINCT id, version AS v FROM accounts"},
			steps: []step{x("DELETE FROM accounts WHERE id = (SELECT id FROM acc_v ORDER BY v, id LIMIT 1)")}},
		one(c4, "statement_timestamp", "DELETE FROM accounts WHERE statement_timestamp() = transaction_timestamp()", Exact),
	)

	// ---- 5: transaction control as SQL text.
	es = append(es,
		entry{class: c5, name: "begin_commit", want: Refused, steps: []step{
			x("BEGIN"), x("UPDATE accounts SET balance = 0 WHERE id = 1"), x("COMMIT")}},
		entry{class: c5, name: "start_transaction_end", want: Refused, steps: []step{
			x("START TRANSACTION ISOLATION LEVEL SERIALIZABLE"), x("DELETE FROM accounts WHERE id = 2"), x("END")}},
		entry{class: c5, name: "begin_work_commit_unguarded_first", want: Refused, steps: []step{
			x("  begin work"), x("UPDATE ledger SET note = 'x'"), x("INSERT INTO accounts (id, balance) VALUES (9, 9)"), x("commit work")}},
		entry{class: c5, name: "commit_inside_begintx", want: Refused, tx: true, steps: []step{
			x("INSERT INTO accounts (id, balance) VALUES (9, 9)"), x("COMMIT"), x("INSERT INTO accounts (id, balance) VALUES (10, 10)")}},
		entry{class: c5, name: "comment_before_begin", want: Refused, steps: []step{
			x("/* tx */ BEGIN"), x("INSERT INTO accounts (id, balance) VALUES (9, 9)"), x("COMMIT")}},
	)

	// ---- 6: pgx simple protocol and exec mode: a stale write is ErrFenced, not a type error.
	for _, mode := range []string{"simple_protocol", "exec"} {
		p := "default_query_exec_mode=" + mode
		es = append(es,
			entry{class: c6, name: mode + "/update", dsn: p, want: Fenced,
				steps: []step{x("UPDATE accounts SET balance = balance - $1 WHERE id = $2", 10, 1)}},
			entry{class: c6, name: mode + "/update_multi_row", dsn: p, want: Fenced,
				steps: []step{x("UPDATE accounts SET balance = $1 WHERE id >= $2", 7, 2)}},
			entry{class: c6, name: mode + "/upsert", dsn: p, want: Fenced,
				steps: []step{x("INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance", 1, 5)}},
			entry{class: c6, name: mode + "/delete", dsn: p, want: Fenced,
				steps: []step{x("DELETE FROM accounts WHERE id = $1", 1)}},
			entry{class: c6, name: mode + "/delete_no_args", dsn: p, want: Fenced,
				steps: []step{x("DELETE FROM accounts WHERE balance > 250")}},
			entry{class: c6, name: mode + "/update_returning", dsn: p, want: Fenced,
				steps: []step{q("UPDATE accounts SET balance = $1 WHERE id = $2 RETURNING id, balance", 9, 3)}},
		)
	}

	// ---- classic shapes.
	es = append(es,
		// multi-statement strings need the simple protocol on the raw driver
		entry{class: cC, name: "multi_statement_write_first", want: Refused, dsn: "default_query_exec_mode=simple_protocol",
			steps: []step{x("UPDATE accounts SET balance = 0 WHERE id = 1; SELECT 1")}},
		entry{class: cC, name: "multi_statement_write_second", want: Refused, dsn: "default_query_exec_mode=simple_protocol",
			steps: []step{x("SELECT 1; DELETE FROM accounts")}},
		entry{class: cC, name: "multi_statement_comment_hidden", want: Refused, dsn: "default_query_exec_mode=simple_protocol",
			steps: []step{x("SELECT 1 /* ; */; UPDATE accounts SET balance = 0 -- ;")}},
		entry{class: cC, name: "multi_statement_dollar_hidden", want: Refused, dsn: "default_query_exec_mode=exec",
			steps: []step{x("SELECT $$;$$; UPDATE accounts SET balance = 0")}},
		one(cC, "update", "UPDATE accounts SET balance = 0 WHERE id = 1", Fenced),
		one(cC, "update_all", "UPDATE accounts SET balance = balance + 1", Fenced),
		one(cC, "update_qualified_quoted", `UPDATE "public"."accounts" SET balance = 0 WHERE id = 2`, Fenced),
		one(cC, "update_upper_case_comments", "/* c */ UPDATE/**/ACCOUNTS SET balance = 0 -- x", Fenced),
		one(cC, "update_from", "UPDATE accounts a SET balance = a.balance + l.amount FROM ledger l WHERE l.account_id = a.id", Fenced),
		one(cC, "with_read_update_from", "WITH r AS (SELECT account_id FROM ledger) UPDATE accounts SET balance = 1 FROM r WHERE accounts.id = r.account_id", Fenced),
		one(cC, "update_returning", "UPDATE accounts SET balance = 5 WHERE id = 1 RETURNING *", Fenced),
		one(cC, "mapped_columns_update", "UPDATE accounts SET balance = 0, fence_token = 0, version = 0 WHERE id = 1", Fenced),
		one(cC, "mapped_columns_update_args", "UPDATE accounts SET fence_token = $1, balance = $2 WHERE id = $3", Fenced, 0, 1, 2),
		one(cC, "mapped_columns_upsert",
			"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 999, 0) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance, fence_token = EXCLUDED.fence_token, version = EXCLUDED.version", Fenced),
		one(cC, "upsert", "INSERT INTO accounts (id, balance) VALUES (1, 7) ON CONFLICT (id) DO UPDATE SET balance = 7", Fenced),
		one(cC, "upsert_on_constraint_alias", "INSERT INTO accounts AS a (id, balance) VALUES (2, 7) ON CONFLICT ON CONSTRAINT accounts_pkey DO UPDATE SET balance = a.balance + 1", Fenced),
		one(cC, "upsert_multi_row", "INSERT INTO accounts (id, balance) VALUES (9, 9), (3, 3) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance", Fenced),
		one(cC, "delete", "DELETE FROM accounts WHERE id = 1", Fenced),
		one(cC, "delete_all", "DELETE FROM accounts", Fenced),
		one(cC, "claim_for_update", "SELECT id, balance FROM accounts WHERE id = 1 FOR UPDATE", Claim),
		one(cC, "claim_for_no_key_update_ordered", "SELECT * FROM accounts ORDER BY balance DESC LIMIT 2 FOR NO KEY UPDATE", Claim),
		one(cC, "no_token_update", "UPDATE accounts SET balance = 0", NoToken),
		one(cC, "no_token_delete", "DELETE FROM accounts WHERE id = 1", NoToken),
		one(cC, "no_token_insert", "INSERT INTO accounts (id, balance) VALUES (9, 9)", NoToken),
		one(cC, "no_token_upsert", "INSERT INTO accounts (id, balance) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET balance = 1", NoToken),
	)

	// ---- harmless.
	es = append(es,
		one(cH, "select_comments_spacing", "  SELECT   id ,balance/* accounts; UPDATE accounts */FROM  accounts -- ; DELETE\n WHERE id = $1", Harmless, 2),
		one(cH, "select_lower_case_all", "select * from accounts order by id", Harmless),
		one(cH, "select_dollar_string", "SELECT $q$UPDATE accounts SET balance = 0$q$ AS s, count(*) FROM accounts", Harmless),
		one(cH, "with_read", "WITH a AS (SELECT id FROM accounts WHERE balance > 150) SELECT count(*) FROM a", Harmless),
		one(cH, "values", "VALUES (1, 'accounts'), (2, 'x')", Harmless),
		one(cC, "claim_for_share", "SELECT id FROM accounts WHERE id = 1 FOR SHARE", Claim),
		entry{class: cH, name: "for_update_without_token", want: Harmless, noTok: true,
			steps: []step{s("SELECT id, balance FROM accounts WHERE id <= 2 FOR UPDATE")}},
		one(cH, "write_unguarded", "UPDATE ledger SET note = 'accounts' WHERE id = 1", Harmless),
		one(cH, "write_unguarded_reading_guarded", "UPDATE ledger SET amount = 0 WHERE account_id IN (SELECT id FROM accounts WHERE balance > 150)", Harmless),
		one(cH, "delete_unguarded_reading_guarded", "DELETE FROM ledger WHERE account_id IN (SELECT id FROM accounts WHERE balance < 150)", Harmless),
		one(cH, "insert_unguarded_select_guarded", "INSERT INTO ledger (id, account_id, note) SELECT id + 100, id, 'copy' FROM accounts", Harmless),
		one(cH, "create_prefix_named_table", "CREATE TABLE accounts_archive (id BIGINT PRIMARY KEY, balance BIGINT)", Harmless),
		entry{class: cH, name: "write_prefix_named_table", want: Harmless,
			setup: []string{"CREATE TABLE accounts_archive (id BIGINT PRIMARY KEY, balance BIGINT)"},
			steps: []step{x("INSERT INTO accounts_archive (id, balance) VALUES ($1, $2)", 1, 2), x("UPDATE accounts_archive SET balance = 3"), x("DROP TABLE accounts_archive")}},
		entry{class: cH, name: "savepoints_in_begintx", want: Harmless, tx: true, steps: []step{
			x("SAVEPOINT sp1"), x("UPDATE ledger SET note = 'a'"), x("ROLLBACK TO SAVEPOINT sp1"),
			x("INSERT INTO ledger (id, account_id) VALUES (20, 1)"), x("RELEASE SAVEPOINT sp1"), s("SELECT count(*) FROM accounts")}},
		one(cH, "set_unrelated", "SET application_name = 'redteam'", Harmless),
		one(cH, "set_config_unrelated", "SELECT set_config('application_name', 'redteam', false)", Harmless),
		one(cH, "show", "SHOW server_version_num", Harmless),
	)
	// ---- The third catalogue (comment-first heads, quoted EXPLAIN options, statements
	// that reach a guarded table without naming it): each changes accounts on the raw
	// driver.
	es = append(es,
		one(c2, "comment_first_do", `/*+*/ DO E'BEGIN EXECUTE ''DELETE FROM acc''||''ounts WHERE id = 3''\073 END'`, Refused),
		one(c2, "cr_ended_comment_do", "-- x\rDO E'BEGIN EXECUTE ''UPDATE acc''||''ounts SET balance = 0''\073 END'", Refused),
		one(c1, "explain_quoted_analyze", `EXPLAIN ("analyze") DELETE FROM accounts WHERE id = 2`, Refused),
		entry{class: c1, name: "truncate_cascade_through_fk", want: Refused,
			setup: []string{"CREATE TABLE owners (id BIGINT PRIMARY KEY)", "INSERT INTO owners VALUES (1)",
				"ALTER TABLE accounts ADD COLUMN owner_id BIGINT REFERENCES owners (id)"},
			steps: []step{x("TRUNCATE owners CASCADE")}},
	)
	return es
}
