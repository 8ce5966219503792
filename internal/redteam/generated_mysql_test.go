// The MariaDB part of the generated catalogue (generated_catalogue_test.go): its statement
// kinds, name spellings, separators, hand-made lexer-boundary cases and setup.

package redteam

import (
	"fmt"
	"testing"
)

func mysqlGenKinds() map[string]string {
	return map[string]string{
		"upd":          "UPDATE~{T}~SET~balance~=~0~WHERE~id~=~1",
		"upd_lim":      "UPDATE~{T}~SET~balance~=~0~ORDER~BY~id~DESC~LIMIT~1",
		"upd_mod":      "UPDATE~LOW_PRIORITY~IGNORE~{T}~SET~balance~=~0",
		"upd_alias":    "UPDATE~{T}~AS~a~SET~a.balance~=~0",
		"upd_join":     "UPDATE~{T}~a~JOIN~ledger~l~ON~a.id~=~l.account_id~SET~a.balance~=~0",
		"upd_join2":    "UPDATE~ledger~l~JOIN~{T}~a~ON~a.id~=~l.account_id~SET~a.balance~=~0",
		"upd_comma":    "UPDATE~ledger~l,~{T}~a~SET~a.balance~=~0~WHERE~a.id~=~l.account_id",
		"upd_straight": "UPDATE~ledger~l~STRAIGHT_JOIN~{T}~a~ON~a.id~=~l.account_id~SET~a.balance~=~0",
		"upd_paren":    "UPDATE~(ledger~l,~{T}~a)~SET~a.balance~=~0~WHERE~a.id~=~l.account_id",
		"upd_nested":   "UPDATE~ledger~l~JOIN~(~{T}~a~)~ON~a.id~=~l.account_id~SET~a.balance~=~0",
		"upd_bare":     "UPDATE~ledger,~{T}~SET~balance~=~0",
		"upd_idx":      "UPDATE~{T}~USE~INDEX~(PRIMARY)~SET~balance~=~0",
		"upd_sub":      "UPDATE~{T}~SET~balance~=~(SELECT~0)~WHERE~id~IN~(SELECT~account_id~FROM~ledger)",
		"del":          "DELETE~FROM~{T}~WHERE~id~=~1",
		"del_lim":      "DELETE~FROM~{T}~ORDER~BY~id~LIMIT~1",
		"del_mod":      "DELETE~LOW_PRIORITY~QUICK~IGNORE~FROM~{T}~WHERE~id~=~1",
		"del_ret":      "DELETE~FROM~{T}~WHERE~id~=~1~RETURNING~id",
		"del_alias":    "DELETE~a~FROM~{T}~a~WHERE~a.id~=~1",
		"del_join":     "DELETE~a~FROM~{T}~a~JOIN~ledger~l~ON~a.id~=~l.account_id",
		"del_join2":    "DELETE~a~FROM~ledger~l~JOIN~{T}~a~ON~a.id~=~l.account_id",
		"del_using":    "DELETE~FROM~a~USING~{T}~a~JOIN~ledger~l~ON~a.id~=~l.account_id",
		"del_both":     "DELETE~l,~a~FROM~ledger~l~JOIN~{T}~a~ON~a.id~=~l.account_id",
		"del_star":     "DELETE~{T}.*~FROM~{T}~WHERE~id~=~1",
		"del_name":     "DELETE~{T}~FROM~{T}~WHERE~id~=~1",
		"del_comma":    "DELETE~{T}~FROM~{T},~ledger~WHERE~{T}.id~=~ledger.account_id",
		"del_part":     "DELETE~FROM~{T}~PARTITION~(p0)",
		"ins_dup":      "INSERT~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~DUPLICATE~KEY~UPDATE~balance~=~0",
		"ins_dup_vals": "INSERT~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~DUPLICATE~KEY~UPDATE~balance~=~VALUES(balance)",
		"ins_set_dup":  "INSERT~INTO~{T}~SET~id~=~1,~balance~=~0~ON~DUPLICATE~KEY~UPDATE~balance~=~0",
		"ins_sel_dup":  "INSERT~INTO~{T}~(id,~balance)~SELECT~account_id,~0~FROM~ledger~ON~DUPLICATE~KEY~UPDATE~balance~=~0",
		"ins_new":      "INSERT~INTO~{T}~(id,~balance)~VALUES~(9,~9)",
		"ins_set":      "INSERT~INTO~{T}~SET~id~=~9,~balance~=~9",
		"ins_ign":      "INSERT~IGNORE~INTO~{T}~(id,~balance)~VALUES~(9,~9)",
		"ins_nocol":    "INSERT~INTO~{T}~VALUES~(9,~9,~999,~9)",
		"ins_ret":      "INSERT~INTO~{T}~(id,~balance)~VALUES~(9,~9)~RETURNING~id",
		"ins_sel":      "INSERT~INTO~{T}~(id,~balance)~SELECT~id~+~20,~amount~FROM~ledger",
		"ins_tbl":      "INSERT~INTO~{T}~(id,~balance)~TABLE~ledger",
		"ins_values":   "INSERT~INTO~{T}~(id,~balance)~VALUES~ROW(9,~9)",
		"ins_nointo":   "INSERT~{T}~(id,~balance)~VALUES~(1,~0)~ON~DUPLICATE~KEY~UPDATE~balance~=~0",
		"ins_hi":       "INSERT~HIGH_PRIORITY~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~DUPLICATE~KEY~UPDATE~balance~=~0",
		"repl":         "REPLACE~INTO~{T}~(id,~balance)~VALUES~(1,~0)",
		"repl_set":     "REPLACE~{T}~SET~id~=~1,~balance~=~0",
		"repl_sel":     "REPLACE~INTO~{T}~(id,~balance)~SELECT~account_id,~0~FROM~ledger",
		"repl_low":     "REPLACE~LOW_PRIORITY~{T}~(id,~balance)~VALUES~(1,~0)",
		"cte_upd":      "WITH~x~AS~(SELECT~1~AS~n)~UPDATE~{T}~SET~balance~=~0~WHERE~id~IN~(SELECT~n~FROM~x)",
		"cte_del":      "WITH~x~AS~(SELECT~1~AS~n)~DELETE~FROM~{T}~WHERE~id~IN~(SELECT~n~FROM~x)",
		"multi":        "SELECT~1;~UPDATE~{T}~SET~balance~=~0",
		"multi2":       "UPDATE~ledger~SET~amount~=~0;~DELETE~FROM~{T}",
		"exec_imm":     "EXECUTE~IMMEDIATE~'UPDATE~{T}~SET~balance~=~0'",
		"exec_imm_dq":  "EXECUTE~IMMEDIATE~\"DELETE~FROM~{T}\"",
		"prepare":      "PREPARE~genp~FROM~'UPDATE~{T}~SET~balance~=~0'",
		"truncate":     "TRUNCATE~TABLE~{T}",
		"truncate2":    "TRUNCATE~{T}",
		"load":         "LOAD~DATA~INFILE~'/etc/hostname'~REPLACE~INTO~TABLE~{T}~(id)",
		"load_local":   "LOAD~DATA~LOCAL~INFILE~'/etc/hostname'~REPLACE~INTO~TABLE~{T}~(id)",
		"load_xml":     "LOAD~XML~INFILE~'/etc/hostname'~REPLACE~INTO~TABLE~{T}",
		"handler":      "HANDLER~{T}~OPEN",
		"lock_upd":     "SELECT~*~FROM~{T}~FOR~UPDATE",
		"create_sel":   "CREATE~TEMPORARY~TABLE~gen_t~SELECT~*~FROM~{T}",
		"alter":        "ALTER~TABLE~{T}~ENGINE~=~InnoDB",
		"analyze":      "ANALYZE~TABLE~{T}",
		"ddl_rename":   "RENAME~TABLE~{T}~TO~gen_moved,~gen_moved~TO~accounts",
	}
}

func mysqlGenNames(db string) []string {
	return []string{
		"accounts", "`accounts`", db + ".accounts", "ACCOUNTS", "Accounts", "`" + db + "`.`accounts`", "`" + db + "`.accounts",
		db + " . accounts", db + ".`accounts`", "`acc``ounts`", "`accounts `", "\"accounts\"", "'accounts'",
		"/*!accounts*/", "/*!00000 accounts*/", "/*M!accounts*/", "/*M!100000 accounts */", "/*!50000 accounts */",
		"accounts/**/", "/**/accounts", "ａccounts", "accounts\u200b", "`accounts\u200b`", "`ACCOUNTS`",
		"`" + db + "`.`ACCOUNTS`", "(accounts)", "accounts`", "`accounts`/*!*/",
	}
}

var mysqlGenSeps = []string{" ", "/**/", "\n-- c\n", " # c\n", "/*!*/", "/*M!*/", " /*!99999 x*/ ", " /*!999999 x*/ ", " /*M!999999 x*/ ", "/*+ NO_INDEX(accounts) */", "\t", "\n--\tc\n", "\n", "\u00a0", "\v", "\f", "/*! */"}

func mysqlGenHandCases() []genCase {
	c := hand
	cs := []genCase{
		c("dashdash_nospace", "SELECT 1 --1; UPDATE accounts SET balance = 0"),
		c("dashdash_ctl", "SELECT 1 --\x01; UPDATE accounts SET balance = 0\n"),
		c("dashdash_nl", "SELECT 1 --\nUPDATE accounts SET balance = 0"),
		c("dashdash_tab", "SELECT 1 --\t; UPDATE accounts SET balance = 0"),
		c("vers_semi", "SELECT 1 /*!50000 ; UPDATE accounts SET balance = 0 */"),
		c("vers_semi_m", "SELECT 1 /*M!100000 ; UPDATE accounts SET balance = 0 */"),
		c("vers_nested", "SELECT 1 /*!50000 /* n */ ; UPDATE accounts SET balance = 0 */"),
		c("vers_comma_upd", "UPDATE ledger l /*!, accounts a */ SET a.balance = 0 WHERE a.id = l.account_id"),
		c("vers_join_upd", "UPDATE ledger /*M! JOIN accounts a ON a.id = ledger.account_id */ SET a.balance = 0"),
		c("vers_del_join", "DELETE /*!a*/ FROM ledger /*!JOIN accounts a ON a.id = ledger.account_id*/ WHERE 1 = 0"),
		c("bt_backslash", "SELECT 1 AS `a\\`; UPDATE accounts SET balance = 0; -- `"),
		c("dq_bs", "SELECT \"x\\\"; UPDATE accounts SET balance = 0; -- \""),
		c("sq_bs", "SELECT 'x\\'; UPDATE accounts SET balance = 0; -- '"),
		c("sq_double", "SELECT 'x'''; UPDATE accounts SET balance = 0"),
		c("utf8_intro", "SELECT _utf8mb4'x'; UPDATE accounts SET balance = 0"),
		c("utf8_intro_bs", "SELECT _binary'x\\'; UPDATE accounts SET balance = 0; -- '"),
		c("n_str", "SELECT N'x\\'; UPDATE accounts SET balance = 0; -- '"),
		c("x_str", "SELECT X'41'; UPDATE accounts SET balance = 0"),
		c("at_var_q", "SELECT @`a`; UPDATE accounts SET balance = 0"),
		c("at_var_sq", "SELECT @'a\\'; UPDATE accounts SET balance = 0; -- '"),
		c("hash_str", "SELECT '#'; UPDATE accounts SET balance = 0"),
		c("hash_in_bt", "SELECT 1 AS `#`; UPDATE accounts SET balance = 0"),
		c("nbe", "SELECT 'x\\'; UPDATE accounts SET balance = 0; -- '", "SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"),
		c("nbe_vers", "SELECT 'x\\'; UPDATE accounts SET balance = 0; -- '", "/*!50000 SET sql_mode = 'NO_BACKSLASH_ESCAPES,STRICT_ALL_TABLES' */"),
		c("nbe_stmt", "SET STATEMENT sql_mode = 'NO_BACKSLASH_ESCAPES,STRICT_ALL_TABLES' FOR SELECT 'x\\'; UPDATE accounts SET balance = 0; -- '"),
		c("set_stmt_upd", "SET STATEMENT max_statement_time = 100 FOR UPDATE accounts SET balance = 0"),
		c("set_stmt_ansi", "SET STATEMENT sql_mode = 'ANSI_QUOTES,STRICT_ALL_TABLES' FOR UPDATE \"accounts\" SET balance = 0"),
		c("set_stmt_del", "SET STATEMENT sql_mode = 'STRICT_ALL_TABLES' FOR DELETE FROM accounts"),
		c("ansi", "UPDATE \"accounts\" SET balance = 0", "SET sql_mode = 'ANSI_QUOTES,STRICT_ALL_TABLES'"),
		c("ansi_dq_hide", "SELECT \"a\\\"; UPDATE accounts SET balance = 0; -- \"", "SET sql_mode = 'ANSI_QUOTES,STRICT_ALL_TABLES'"),
		c("oracle", "UPDATE accounts SET balance = 0", "SET sql_mode = 'ORACLE'"),
		c("names_sjis", "SELECT '\x95\\'; UPDATE accounts SET balance = 0; -- '", "SET NAMES sjis"),
		c("charset_client", "SELECT '\x95\\'; UPDATE accounts SET balance = 0; -- '", "SET character_set_client = gbk"),
		c("prep_exec", "EXECUTE genq", "PREPARE genq FROM 'UPDATE accounts SET balance = 0'"),
		c("prep_exec_var", "EXECUTE genq2", "SET @s = 'UPDATE accounts SET balance = 0'", "PREPARE genq2 FROM @s"),
		c("exec_imm_var", "EXECUTE IMMEDIATE @s2", "SET @s2 = 'DELETE FROM accounts'"),
		c("exec_imm_concat", "EXECUTE IMMEDIATE CONCAT('DELETE FROM ', 'accounts')"),
		c("exec_imm_hex", "EXECUTE IMMEDIATE X'44454C4554452046524F4D206163636F756E7473'"),
		c("exec_imm_esc", "EXECUTE IMMEDIATE 'DELETE FROM acc\\ounts'"),
		c("exec_imm_bt", "EXECUTE IMMEDIATE 'DELETE FROM `acc``ounts`'"),
		c("call", "CALL gen_proc()"),
		c("call_noparen", "CALL gen_proc"),
		c("sel_fn", "SELECT gen_fn()"),
		c("do_fn", "DO gen_fn()"),
		c("upd_fn", "UPDATE ledger SET amount = gen_fn()"),
		c("view_upd", "UPDATE gen_v SET balance = 0"),
		c("begin_not_atomic", "BEGIN NOT ATOMIC UPDATE accounts SET balance = 0; END"),
		c("if_block", "IF 1 THEN UPDATE accounts SET balance = 0; END IF"),
		c("values_stmt", "VALUES (1), (2)"),
		c("upd_dq_table", "UPDATE ledger SET note = \"accounts\"; UPDATE accounts SET balance = 0"),
	}
	// the version-comment family: shapes × versions × markers (the marker and version
	// are the spelling)
	vc := func(shape, m, v, sql string) genCase {
		return genCase{name: shape + "_" + m + v, kind: shape, spelling: "/*" + m + v, sql: sql}
	}
	for _, v := range []string{"1", "12", "1234", "12345", "99999", "100000", "101100", "101199", "999999", "1234567", "0"} {
		for _, m := range []string{"!", "M!"} {
			cs = append(cs,
				vc("vhide", m, v, fmt.Sprintf("UPDATE /*%s%s ledger */ accounts SET amount = 0", m, v)),
				vc("vhide2", m, v, fmt.Sprintf("UPDATE /*%s%s ledger */ accounts SET balance = 0", m, v)),
				vc("vhide_del", m, v, fmt.Sprintf("DELETE FROM /*%s%s ledger, */ accounts WHERE id = 1", m, v)),
				vc("vhide_del2", m, v, fmt.Sprintf("DELETE /*%s%s ledger */ FROM accounts WHERE id = 1", m, v)),
				vc("vshow", m, v, fmt.Sprintf("UPDATE ledger l /*%s%s , accounts a */ SET a.balance = 0 WHERE 1 = 1", m, v)),
				vc("vshow_sel", m, v, fmt.Sprintf("SELECT 1 /*%s%s ; DELETE FROM accounts */", m, v)),
				vc("vshow_ins", m, v, fmt.Sprintf("INSERT INTO ledger (id, account_id) VALUES (99, 1) /*%s%s ; DELETE FROM accounts */", m, v)),
				vc("vshow_dup", m, v, fmt.Sprintf("INSERT INTO /*%s%s accounts */ ledger (id, balance) VALUES (1, 0) ON DUPLICATE KEY UPDATE balance = 0", m, v)),
				vc("vshow_dup2", m, v, fmt.Sprintf("INSERT INTO /*%s%s accounts -- */ ledger\n (id, balance) VALUES (1, 0) ON DUPLICATE KEY UPDATE balance = 0", m, v)),
			)
		}
	}
	return cs
}

func mysqlGenSetup() []string {
	return []string{
		"CREATE PROCEDURE gen_proc() UPDATE accounts SET balance = 0",
		"CREATE FUNCTION gen_fn() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE accounts SET balance = 0; RETURN 1; END",
		"CREATE VIEW gen_v AS SELECT * FROM accounts",
	}
}

// mysqlGenCases is the MariaDB catalogue on d's database.
func mysqlGenCases(d *dbs) []genCase {
	var db string
	if err := d.raw.QueryRowContext(d.ctx, "SELECT DATABASE()").Scan(&db); err != nil {
		d.t.Fatal(err)
	}
	return append(expandKinds(mysqlGenKinds(), mysqlGenNames(db), mysqlGenSeps), mysqlGenHandCases()...)
}

// TestGeneratedCatalogueMariaDB runs the MariaDB catalogue, a new connection per
// statement (HANDLER, PREPARE and SET must not leak into the next).
func TestGeneratedCatalogueMariaDB(t *testing.T) {
	d := freshDB(t, mysqlBackend(), entry{})
	runGenerated(t, d, mysqlGenSetup(), sampleCases(t, mysqlGenCases(d), 13, 7), true)
}

// TestGeneratedDifferentialMariaDB: with a fresh token, as the raw driver.
func TestGeneratedDifferentialMariaDB(t *testing.T) {
	d := freshDB(t, mysqlBackend(), entry{})
	for _, st := range mysqlGenSetup() {
		d.must(st)
	}
	diffGenerated(t, d, sampleCases(t, mysqlGenCases(d), 23, 11), true)
}
