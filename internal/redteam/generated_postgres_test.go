// The PostgreSQL part of the generated catalogue (generated_catalogue_test.go): its statement
// kinds, name spellings, separators, hand-made lexer-boundary cases and setup.

package redteam

import (
	"strings"
	"testing"
)

func postgresGenKinds() map[string]string {
	return map[string]string{
		"upd":            "UPDATE~{T}~SET~balance~=~0~WHERE~id~=~1",
		"upd_alias":      "UPDATE~{T}~AS~a~SET~balance~=~0~WHERE~a.id~=~1",
		"upd_star":       "UPDATE~{T}~*~SET~balance~=~0",
		"upd_only":       "UPDATE~ONLY~{T}~SET~balance~=~0",
		"upd_from":       "UPDATE~{T}~SET~balance~=~l.amount~FROM~ledger~l~WHERE~l.account_id~=~{T}.id",
		"upd_ret":        "UPDATE~{T}~SET~balance~=~0~WHERE~id~=~2~RETURNING~*",
		"upd_rowcmp":     "UPDATE~{T}~SET~(balance,~version)~=~(0,~0)~WHERE~id~=~1",
		"upd_rowsub":     "UPDATE~{T}~SET~(balance)~=~(SELECT~0)~WHERE~id~=~1",
		"del":            "DELETE~FROM~{T}~WHERE~id~=~1",
		"del_using":      "DELETE~FROM~{T}~USING~ledger~l~WHERE~l.account_id~=~{T}.id",
		"del_ret":        "DELETE~FROM~{T}~WHERE~id~=~3~RETURNING~id",
		"ins_conf":       "INSERT~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~CONFLICT~(id)~DO~UPDATE~SET~balance~=~EXCLUDED.balance",
		"ins_conf_w":     "INSERT~INTO~{T}~AS~a~(id,~balance)~VALUES~(1,~0)~ON~CONFLICT~(id)~DO~UPDATE~SET~balance~=~0~WHERE~a.id~=~1",
		"ins_conf_c":     "INSERT~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~CONFLICT~ON~CONSTRAINT~accounts_pkey~DO~UPDATE~SET~balance~=~0",
		"ins_new":        "INSERT~INTO~{T}~(id,~balance)~VALUES~(9,~9)",
		"ins_sel":        "INSERT~INTO~{T}~(id,~balance)~SELECT~id~+~20,~amount~FROM~ledger",
		"ins_ovr":        "INSERT~INTO~{T}~(id,~balance,~fence_token)~OVERRIDING~USER~VALUE~VALUES~(9,~9,~999)",
		"ins_default":    "INSERT~INTO~{T}~DEFAULT~VALUES",
		"ins_nocols":     "INSERT~INTO~{T}~VALUES~(9,~9,~999,~9)",
		"cte_upd":        "WITH~x~AS~(UPDATE~{T}~SET~balance~=~0~WHERE~id~=~1~RETURNING~*)~SELECT~*~FROM~x",
		"cte_del":        "WITH~x~AS~(DELETE~FROM~{T}~WHERE~id~=~1~RETURNING~*)~SELECT~1",
		"cte_ins":        "WITH~x~AS~(INSERT~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~CONFLICT~(id)~DO~UPDATE~SET~balance~=~0~RETURNING~1)~SELECT~1",
		"cte_nested":     "WITH~y~AS~(WITH~x~AS~(UPDATE~{T}~SET~balance~=~0~RETURNING~1)~SELECT~*~FROM~x)~SELECT~*~FROM~y",
		"cte_rec":        "WITH~RECURSIVE~r(n)~AS~(SELECT~1~UNION~ALL~SELECT~n+1~FROM~r~WHERE~n<2),~x~AS~(DELETE~FROM~{T}~WHERE~id~IN~(SELECT~n~FROM~r)~RETURNING~1)~SELECT~1",
		"cte_mat":        "WITH~x~AS~MATERIALIZED~(UPDATE~{T}~SET~balance~=~0~RETURNING~1)~SELECT~1",
		"cte_then_upd":   "WITH~x~AS~(SELECT~1~AS~n)~UPDATE~{T}~SET~balance~=~0~FROM~x~WHERE~id~=~x.n",
		"cte_then_del":   "WITH~x~AS~(SELECT~1~AS~n)~DELETE~FROM~{T}~WHERE~id~IN~(SELECT~n~FROM~x)",
		"cte_ins2":       "WITH~x~AS~(SELECT~1~AS~n)~INSERT~INTO~{T}~(id,~balance)~SELECT~n,~0~FROM~x~ON~CONFLICT~(id)~DO~UPDATE~SET~balance~=~0",
		"merge_u":        "MERGE~INTO~{T}~a~USING~ledger~l~ON~a.id~=~l.account_id~WHEN~MATCHED~THEN~UPDATE~SET~balance~=~0",
		"merge_d":        "MERGE~INTO~{T}~a~USING~ledger~l~ON~a.id~=~l.account_id~WHEN~MATCHED~THEN~DELETE",
		"merge_i":        "MERGE~INTO~{T}~a~USING~(SELECT~9~AS~id)~s~ON~a.id~=~s.id~WHEN~NOT~MATCHED~THEN~INSERT~(id,~balance)~VALUES~(s.id,~9)",
		"merge_all":      "MERGE~INTO~{T}~a~USING~ledger~l~ON~a.id~=~l.account_id~WHEN~MATCHED~AND~l.amount~<~0~THEN~DELETE~WHEN~MATCHED~THEN~UPDATE~SET~balance~=~1~WHEN~NOT~MATCHED~THEN~DO~NOTHING",
		"merge_noint":    "MERGE~{T}~USING~ledger~l~ON~{T}.id~=~l.account_id~WHEN~MATCHED~THEN~UPDATE~SET~balance~=~0",
		"merge_sub":      "MERGE~INTO~{T}~USING~(SELECT~1~AS~k)~s~ON~id~=~s.k~WHEN~MATCHED~THEN~UPDATE~SET~balance~=~0",
		"merge_cte":      "WITH~s~AS~(SELECT~1~AS~k)~MERGE~INTO~{T}~USING~s~ON~id~=~s.k~WHEN~MATCHED~THEN~UPDATE~SET~balance~=~0",
		"merge_nm_first": "MERGE~INTO~{T}~a~USING~ledger~l~ON~a.id~=~l.account_id~WHEN~NOT~MATCHED~THEN~DO~NOTHING~WHEN~MATCHED~THEN~UPDATE~SET~balance~=~0",
		"paren_sel_upd":  "(UPDATE~{T}~SET~balance~=~0)",
		"multi":          "SELECT~1;~UPDATE~{T}~SET~balance~=~0",
		"multi2":         "UPDATE~ledger~SET~amount~=~0;~DELETE~FROM~{T}",
		"prepare":        "PREPARE~genp~AS~UPDATE~{T}~SET~balance~=~0",
		"do":             "DO~$$BEGIN~UPDATE~{T}~SET~balance~=~0;~END$$",
		"explain_an":     "EXPLAIN~ANALYZE~UPDATE~{T}~SET~balance~=~0",
		"explain_an2":    "EXPLAIN~(ANALYZE)~DELETE~FROM~{T}",
		"explain_an3":    "EXPLAIN~(ANALYZE~true,~COSTS~off)~DELETE~FROM~{T}",
		"create_as":      "CREATE~TEMP~TABLE~gen_x~AS~WITH~x~AS~(DELETE~FROM~{T}~RETURNING~*)~SELECT~*~FROM~x",
		"selinto":        "WITH~x~AS~(DELETE~FROM~{T}~RETURNING~*)~SELECT~*~INTO~TEMP~gen_y~FROM~x",
		"truncate":       "TRUNCATE~{T}",
		"truncate2":      "TRUNCATE~TABLE~ONLY~{T}~CASCADE",
		"copy":           "COPY~(WITH~x~AS~(DELETE~FROM~{T}~RETURNING~1)~SELECT~*~FROM~x)~TO~STDOUT",
		"upd_sub_where":  "UPDATE~ledger~SET~amount~=~0~WHERE~EXISTS~(WITH~x~AS~(DELETE~FROM~{T}~RETURNING~1)~SELECT~1)",
		"values_cte":     "WITH~x~AS~(DELETE~FROM~{T}~RETURNING~1)~VALUES~(1)",
		"table_cte":      "WITH~x~AS~(DELETE~FROM~{T}~RETURNING~1)~TABLE~x",
		"declare":        "DECLARE~c~CURSOR~FOR~WITH~x~AS~(DELETE~FROM~{T}~RETURNING~1)~SELECT~1",
		"rule_like":      "UPDATE~{T}~SET~balance~=~0~WHERE~CURRENT~OF~c",
		"lock_upd":       "SELECT~*~FROM~{T}~FOR~UPDATE",
	}
}

func postgresGenNames(db string) []string {
	return []string{
		"accounts", `"accounts"`, "public.accounts", "ACCOUNTS", "Accounts", `public."accounts"`, `"public".accounts`, `PUBLIC.ACCOUNTS`,
		`U&"accounts"`, `U&"\0061ccounts"`, `U&"!0061ccounts" UESCAPE '!'`, `public.U&"\+000061ccounts"`, `U&"public".U&"accounts"`,
		db + ".public.accounts", `"` + db + `".public.accounts`, `"` + db + `"."public"."accounts"`, strings.ToUpper(db) + ".public.accounts",
		"pg_temp.accounts", "accounts ", "\"accounts\"\u200b", "ａccounts", "ассоunts",
		`U&"accounts" UESCAPE '\'`, `u&"accounts"`, `U&"a\0063counts"`, `"acc""ounts"`,
		"accounts/**/", "/**/accounts", "(accounts)",
	}
}

var postgresGenSeps = []string{" ", "/**/", " /* /* nested */ */ ", "\n-- c\n", "\t", "\n", "/*+x*/", "--\n", "/*\n*/", "\v", "\f", "\u00a0"}

// handcrafted lexer-boundary attacks
func postgresGenHandCases() []genCase {
	c := hand
	return []genCase{
		c("hash_comment", "SELECT 1 # 1; UPDATE accounts SET balance = 0"),
		c("hash_comment2", "SELECT 1 #\nUPDATE accounts SET balance = 0"),
		c("nested_unbal", "SELECT 1 /* /* */ ; UPDATE accounts SET balance = 0; /* */"),
		c("nested_unbal2", "SELECT 1 /* /* */ */ ; UPDATE accounts SET balance = 0"),
		c("estr", "SELECT E'\\'; UPDATE accounts SET balance = 0; --'"),
		c("estr2", "SELECT e'\\\\'; UPDATE accounts SET balance = 0"),
		c("str_bs", "SELECT 'x\\'; UPDATE accounts SET balance = 0; SELECT '\\'"),
		c("dollar", "SELECT $a$ $b$ $a$; UPDATE accounts SET balance = 0; SELECT $b$"),
		c("dollar2", "SELECT $$ $$; UPDATE accounts SET balance = 0"),
		c("dollar_digit", "SELECT 1 $1$; UPDATE accounts SET balance = 0; $1$"),
		c("dollar_ident", "SELECT a$b$ FROM (SELECT 1 AS a$b$) s; UPDATE accounts SET balance = 0; SELECT $b$ x $b$"),
		c("dollar_uni", "SELECT $é$ x $é$; UPDATE accounts SET balance = 0"),
		c("nstr", "SELECT N'x'; UPDATE accounts SET balance = 0"),
		c("bstr", "SELECT B'1', X'1F'; UPDATE accounts SET balance = 0"),
		c("ustr", "SELECT U&'\\0027'; UPDATE accounts SET balance = 0; SELECT ''"),
		c("ustr_esc", "SELECT U&'!0027' UESCAPE '!'; UPDATE accounts SET balance = 0"),
		c("quoted_sc", "SELECT 1 AS \";\"; UPDATE accounts SET balance = 0"),
		c("semi_in_cmt", "SELECT 1 /* ; */ ; DELETE FROM accounts"),
		c("dash_in_str", "SELECT '--'; DELETE FROM accounts"),
		c("op_dash", "SELECT 1 +-- x\n1; DELETE FROM accounts"),
		c("op_slashstar", "SELECT 1 +/* x */1; DELETE FROM accounts"),
		c("cmt_star_slash", "SELECT 1 */ ; DELETE FROM accounts"),
		c("scs_off", "SELECT 'x\\'; UPDATE accounts SET balance = 0; SELECT '\\'", "SET standard_conforming_strings = off"),
		c("scs_off2", "UPDATE ledger SET note = 'a\\' WHERE id = 1; UPDATE accounts SET balance = 0; SELECT '\\'", "SET standard_conforming_strings = off"),
		c("scs_off_cfg", "UPDATE ledger SET note = 'a\\' WHERE id = 1; UPDATE accounts SET balance = 0; SELECT '\\'", "SELECT set_config('standard_conforming_strings', 'off', false)"),
		c("escstr_warn", "UPDATE ledger SET note = 'a\\' WHERE id = 1; UPDATE accounts SET balance = 0; SELECT '\\'", "SET escape_string_warning = off", "SET backslash_quote = on"),
		c("prep_exec", "EXECUTE genq", "PREPARE genq AS UPDATE accounts SET balance = 0"),
		c("prep_exec_sel", "EXECUTE genq2", "PREPARE genq2 AS WITH x AS (DELETE FROM accounts RETURNING 1) SELECT 1"),
		c("prep_exec_param", "EXECUTE genq3(0)", "PREPARE genq3(int) AS UPDATE accounts SET balance = $1"),
		c("call_proc", "CALL gen_proc()"),
		c("sel_fn", "SELECT gen_fn()"),
		c("sel_fn_upd", "UPDATE ledger SET amount = gen_fn()"),
		c("do_exec", "DO $$BEGIN EXECUTE 'UPDATE accounts SET balance = 0'; END$$"),
		c("do_exec_concat", "DO $$BEGIN EXECUTE 'UPDATE acc' || 'ounts SET balance = 0'; END$$"),
		c("do_lang", "DO LANGUAGE plpgsql $$BEGIN UPDATE accounts SET balance = 0; END$$"),
		c("do_tag", "DO $x$BEGIN UPDATE accounts SET balance = 0; END$x$"),
		c("do_str", "DO 'BEGIN UPDATE accounts SET balance = 0; END'"),
		c("do_estr", "DO E'BEGIN UPDATE acc\\x6funts SET balance = 0; END'"),
		c("do_ustr", "DO U&'BEGIN UPDATE acc\\006Funts SET balance = 0; END'"),
		c("do_ustr2", "DO U&'BEGIN UPDATE \\0061ccounts SET balance = 0; END'"),
		c("prep_ustr", "EXECUTE genq4", "PREPARE genq4 AS UPDATE U&\"\\0061ccounts\" SET balance = 0"),
		c("copy_from", "COPY accounts FROM PROGRAM 'true'"),
		c("view_upd", "UPDATE gen_v SET balance = 0"),
		c("view_del", "DELETE FROM gen_v"),
		c("syn_search", "UPDATE accounts SET balance = 0", "SET search_path = gen_s, public"),
		c("upd_from_self", "UPDATE ledger l SET amount = 0 FROM accounts a WHERE a.id = l.account_id"),
		c("sel_setval", "SELECT set_config('fencedsql.claimed', '1', false)"),
		c("lo", "SELECT lo_import('/etc/passwd')"),
		c("sel_dblink", "SELECT * FROM gen_fn_tab()"),
		c("ins_tab_cte", "WITH x AS (DELETE FROM ledger RETURNING 1), y AS (UPDATE accounts SET balance = 0 RETURNING 1) SELECT 1"),
		c("cte_ledger_then", "WITH x AS (UPDATE ledger SET amount = 0 RETURNING account_id) UPDATE accounts SET balance = 0 WHERE id IN (SELECT account_id FROM x)"),
		c("cte_shadow", "WITH accounts AS (SELECT 1 AS id) UPDATE public.accounts SET balance = 0"),
		c("cte_shadow2", "WITH accounts AS (SELECT * FROM ledger) DELETE FROM public.accounts"),
		c("cte_shadow3", "WITH ledger AS (DELETE FROM accounts RETURNING *) SELECT * FROM ledger"),
		c("alias_shadow", "UPDATE ledger AS accounts SET amount = 0 FROM public.accounts a WHERE a.id = 1"),
		c("merge_src_upd", "MERGE INTO ledger l USING accounts a ON l.id = a.id WHEN MATCHED THEN UPDATE SET amount = 0"),
		c("ret_sub", "UPDATE ledger SET amount = 0 RETURNING (SELECT 1 FROM (WITH x AS (DELETE FROM accounts RETURNING 1) SELECT 1) s)"),
		c("tbl_ledger_first", "UPDATE ledger SET note = 'accounts'; UPDATE accounts SET balance = 0"),
		c("comment_ident", "UPDATE \"acc/*\" SET x=1; UPDATE accounts SET balance=0 /*\" */"),
		c("quote_ident_semi", "UPDATE \"a;b\" SET x = 1; UPDATE accounts SET balance = 0"),
	}
}

func postgresGenSetup() []string {
	return []string{
		"CREATE FUNCTION gen_fn() RETURNS int LANGUAGE sql AS 'UPDATE accounts SET balance = 0 RETURNING 1'",
		"CREATE PROCEDURE gen_proc() LANGUAGE sql AS 'UPDATE accounts SET balance = 0'",
		"CREATE FUNCTION gen_fn_tab() RETURNS SETOF int LANGUAGE sql AS 'DELETE FROM accounts RETURNING 1'",
		"CREATE VIEW gen_v AS SELECT * FROM accounts",
		"CREATE SCHEMA gen_s",
	}
}

// postgresGenCases is the PostgreSQL catalogue on d's database.
func postgresGenCases(d *dbs) []genCase {
	var db string
	if err := d.raw.QueryRowContext(d.ctx, "SELECT current_database()").Scan(&db); err != nil {
		d.t.Fatal(err)
	}
	return append(expandKinds(postgresGenKinds(), postgresGenNames(db), postgresGenSeps), postgresGenHandCases()...)
}

// TestGeneratedCataloguePostgres runs the PostgreSQL catalogue in both pgx exec modes.
func TestGeneratedCataloguePostgres(t *testing.T) {
	b := postgresBackend()
	for _, mode := range []string{"", "default_query_exec_mode=simple_protocol"} {
		t.Run("mode="+mode, func(t *testing.T) {
			t.Parallel()
			d := freshDB(t, b, entry{dsn: mode})
			runGenerated(t, d, postgresGenSetup(), sampleCases(t, postgresGenCases(d), 11, 3), false)
		})
	}
}

// TestGeneratedDifferentialPostgres: with a fresh token, as the raw driver.
func TestGeneratedDifferentialPostgres(t *testing.T) {
	b := postgresBackend()
	d := freshDB(t, b, entry{dsn: "default_query_exec_mode=simple_protocol"})
	for _, st := range postgresGenSetup() {
		d.must(st)
	}
	diffGenerated(t, d, sampleCases(t, postgresGenCases(d), 17, 5), false)
}
