// The SQLite part of the generated catalogue (generated_catalogue_test.go): its statement
// kinds, name spellings, separators, hand-made lexer-boundary cases and setup.

package redteam

import (
	"testing"
)

func sqliteGenKinds() map[string]string {
	return map[string]string{
		"upd":          "UPDATE~{T}~SET~balance~=~0~WHERE~id~=~1",
		"upd_or_repl":  "UPDATE~OR~REPLACE~{T}~SET~balance~=~0",
		"upd_or_ign":   "UPDATE~OR~IGNORE~{T}~SET~balance~=~0",
		"upd_or_fail":  "UPDATE~OR~FAIL~{T}~SET~balance~=~0",
		"upd_or_rb":    "UPDATE~OR~ROLLBACK~{T}~SET~balance~=~0",
		"upd_from":     "UPDATE~{T}~SET~balance~=~l.amount~FROM~ledger~l~WHERE~l.account_id~=~{T}.id",
		"upd_as_from":  "UPDATE~{T}~AS~a~SET~balance~=~l.amount~FROM~ledger~AS~l~WHERE~l.account_id~=~a.id",
		"upd_ret":      "UPDATE~{T}~SET~balance~=~0~RETURNING~*",
		"upd_lim":      "UPDATE~{T}~SET~balance~=~0~ORDER~BY~id~LIMIT~1",
		"upd_notidx":   "UPDATE~{T}~NOT~INDEXED~SET~balance~=~0",
		"upd_rowval":   "UPDATE~{T}~SET~(balance,~version)~=~(0,~0)",
		"upd_rowsub":   "UPDATE~{T}~SET~(balance)~=~(SELECT~0)",
		"del":          "DELETE~FROM~{T}~WHERE~id~=~1",
		"del_ret":      "DELETE~FROM~{T}~WHERE~id~=~1~RETURNING~id",
		"del_lim":      "DELETE~FROM~{T}~ORDER~BY~id~LIMIT~1",
		"del_notidx":   "DELETE~FROM~{T}~NOT~INDEXED~WHERE~id~=~1",
		"del_as":       "DELETE~FROM~{T}~AS~a~WHERE~a.id~=~1",
		"ins_conf":     "INSERT~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~CONFLICT~(id)~DO~UPDATE~SET~balance~=~excluded.balance",
		"ins_conf_w":   "INSERT~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~CONFLICT~(id)~DO~UPDATE~SET~balance~=~0~WHERE~id~=~1",
		"ins_conf_nt":  "INSERT~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~CONFLICT~DO~UPDATE~SET~balance~=~0",
		"ins_conf_2":   "INSERT~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~CONFLICT~(balance)~DO~NOTHING~ON~CONFLICT~DO~UPDATE~SET~balance~=~0",
		"ins_conf_sel": "INSERT~INTO~{T}~(id,~balance)~SELECT~account_id,~0~FROM~ledger~WHERE~true~ON~CONFLICT~(id)~DO~UPDATE~SET~balance~=~0",
		"ins_conf_ret": "INSERT~INTO~{T}~(id,~balance)~VALUES~(1,~0)~ON~CONFLICT~(id)~DO~UPDATE~SET~balance~=~0~RETURNING~*",
		"ins_or_repl":  "INSERT~OR~REPLACE~INTO~{T}~(id,~balance)~VALUES~(1,~0)",
		"repl":         "REPLACE~INTO~{T}~(id,~balance)~VALUES~(1,~0)",
		"repl_sel":     "REPLACE~INTO~{T}~(id,~balance)~SELECT~account_id,~0~FROM~ledger",
		"ins_or_ign":   "INSERT~OR~IGNORE~INTO~{T}~(id,~balance)~VALUES~(9,~9)",
		"ins_or_fail":  "INSERT~OR~FAIL~INTO~{T}~(id,~balance)~VALUES~(9,~9)",
		"ins_new":      "INSERT~INTO~{T}~(id,~balance)~VALUES~(9,~9)",
		"ins_nocol":    "INSERT~INTO~{T}~VALUES~(9,~9,~999,~9)",
		"ins_as":       "INSERT~INTO~{T}~AS~a~(id,~balance)~VALUES~(1,~0)~ON~CONFLICT~(id)~DO~UPDATE~SET~balance~=~0~WHERE~a.id~=~1",
		"ins_default":  "INSERT~INTO~{T}~DEFAULT~VALUES",
		"ins_sel":      "INSERT~INTO~{T}~(id,~balance)~SELECT~id~+~20,~amount~FROM~ledger",
		"ins_values":   "INSERT~INTO~{T}~(id,~balance)~VALUES~(9,~9),~(10,~10)",
		"cte_upd":      "WITH~x~AS~(SELECT~1~AS~n)~UPDATE~{T}~SET~balance~=~0~WHERE~id~IN~(SELECT~n~FROM~x)",
		"cte_del":      "WITH~x~AS~(SELECT~1~AS~n)~DELETE~FROM~{T}~WHERE~id~IN~x",
		"cte_ins":      "WITH~x~AS~(SELECT~1~AS~n)~INSERT~OR~REPLACE~INTO~{T}~(id,~balance)~SELECT~n,~0~FROM~x",
		"cte_rec":      "WITH~RECURSIVE~r(n)~AS~(SELECT~1~UNION~ALL~SELECT~n+1~FROM~r~WHERE~n<4)~DELETE~FROM~{T}~WHERE~id~IN~r",
		"cte_shadow":   "WITH~accounts~AS~(SELECT~1~AS~id)~DELETE~FROM~{T}~WHERE~id~IN~(SELECT~id~FROM~accounts)",
		"multi":        "SELECT~1;~UPDATE~{T}~SET~balance~=~0",
		"multi2":       "UPDATE~ledger~SET~amount~=~0;~DELETE~FROM~{T}",
		"lock_upd":     "SELECT~*~FROM~{T}~FOR~UPDATE",
		"drop":         "DELETE~FROM~{T}~WHERE~rowid~=~1",
		"upd_rowid":    "UPDATE~{T}~SET~rowid~=~rowid~+~100~WHERE~id~=~1",
		"upd_oid":      "UPDATE~{T}~SET~balance~=~0~WHERE~_rowid_~=~1",
		"create_as":    "CREATE~TEMP~TABLE~gen_x~AS~SELECT~*~FROM~{T}",
		"analyze":      "ANALYZE~{T}",
	}
}

func sqliteGenNames() []string {
	return []string{
		"accounts", `"accounts"`, "main.accounts", "ACCOUNTS", `"ACCOUNTS"`, "[accounts]", "`accounts`", `"main"."accounts"`,
		"[main].[accounts]", "MAIN.ACCOUNTS", "'accounts'", "main.'accounts'", "'main'.'accounts'", "main . accounts", "`Main`.`Accounts`",
		`"acc""ounts"`, `"accounts "`, "[accounts ]", "ａccounts", "accounts\u200b", "\"accounts\u200b\"", "accounts/**/", "/**/accounts",
		"temp.accounts", "[ACCOUNTS]", "'ACCOUNTS'", "(accounts)", "accounts AS accounts",
	}
}

var sqliteGenSeps = []string{" ", "/**/", "\n-- c\n", "\t", "\n", "\f", "\r", "--\n", "/*\n*/", "\v", "\u00a0", "/*+x*/"}

func sqliteGenHandCases() []genCase {
	c := hand
	return []genCase{
		c("bs_str", "SELECT 'x\\'; UPDATE accounts SET balance = 0; -- '"),
		c("bracket_q", "SELECT 1 AS [a'b]; UPDATE accounts SET balance = 0; -- '"),
		c("bracket_dq", "SELECT 1 AS [a\"b]; UPDATE accounts SET balance = 0; -- \""),
		c("bracket_cmt", "SELECT 1 AS [a/*b]; UPDATE accounts SET balance = 0; -- */"),
		c("bracket_dash", "SELECT 1 AS [a--b]; UPDATE accounts SET balance = 0"),
		c("bracket_semi", "SELECT 1 AS [a;b]; UPDATE accounts SET balance = 0"),
		c("bracket_dbl", "SELECT 1 AS [a]]; UPDATE accounts SET balance = 0; SELECT 1 AS [x]"),
		c("bt_bs", "SELECT 1 AS `a\\`; UPDATE accounts SET balance = 0; -- `"),
		c("dq_bs", "SELECT 1 AS \"a\\\"; UPDATE accounts SET balance = 0; -- \""),
		c("dollar_param", "SELECT $a$; UPDATE accounts SET balance = 0; SELECT $a$"),
		c("dollar_tcl", "SELECT $a(x; y); UPDATE accounts SET balance = 0"),
		c("dollar_tcl2", "SELECT $a::b(';'); UPDATE accounts SET balance = 0"),
		c("dollar_pg", "SELECT $$ x $$; UPDATE accounts SET balance = 0"),
		c("hash_param", "SELECT #1; UPDATE accounts SET balance = 0"),
		c("hash_cmt", "SELECT 1 # x; UPDATE accounts SET balance = 0\n"),
		c("estr", "SELECT E'\\'; UPDATE accounts SET balance = 0; -- '"),
		c("nested_cmt", "SELECT 1 /* /* */ ; UPDATE accounts SET balance = 0; /* */"),
		c("unterminated_cmt", "UPDATE ledger SET amount = 0 /* ; UPDATE accounts SET balance = 0"),
		c("x_blob", "SELECT x'41'; UPDATE accounts SET balance = 0"),
		c("temp_trigger", "UPDATE ledger SET amount = 1 WHERE id = 1", "CREATE TEMP TRIGGER gen_tr AFTER UPDATE ON ledger BEGIN UPDATE accounts SET balance = 0; END"),
		c("temp_view_trigger", "UPDATE gen_tv SET amount = 1", "CREATE TEMP VIEW gen_tv AS SELECT * FROM ledger", "CREATE TEMP TRIGGER gen_tr2 INSTEAD OF UPDATE ON gen_tv BEGIN DELETE FROM accounts; END"),
		c("view_trig", "UPDATE gen_v SET balance = 0"),
		c("trig_other", "INSERT INTO gen_l2 (id) VALUES (1)"),
		c("attach", "UPDATE other.accounts SET balance = 0", "ATTACH DATABASE (SELECT file FROM pragma_database_list WHERE name = 'main') AS other"),
		c("pragma_fk", "DELETE FROM gen_parent", "PRAGMA foreign_keys = ON"),
		c("pragma_rt", "UPDATE accounts SET balance = 0", "PRAGMA recursive_triggers = ON"),
		c("vacuum_into", "VACUUM INTO '/tmp/gen_vac.db'"),
		c("savepoint_upd", "SAVEPOINT accounts"),
		c("sel_fn_changes", "SELECT changes()"),
		c("values_cte", "WITH x AS (SELECT 1) VALUES (1)"),
		c("upd_ident_kw", "UPDATE \"main\".accounts SET balance = 0"),
		c("ins_sel_conf_nowhere", "INSERT INTO accounts (id, balance) SELECT account_id, 0 FROM ledger ON CONFLICT (id) DO UPDATE SET balance = 0"),
	}
}

func sqliteGenSetup() []string {
	return []string{
		"CREATE VIEW gen_v AS SELECT * FROM accounts",
		"CREATE TRIGGER gen_vt INSTEAD OF UPDATE ON gen_v BEGIN UPDATE accounts SET balance = NEW.balance WHERE id = OLD.id; END",
		"CREATE TABLE gen_l2 (id INTEGER PRIMARY KEY)",
		"CREATE TRIGGER gen_l2t AFTER INSERT ON gen_l2 BEGIN DELETE FROM accounts; END",
		"CREATE TABLE gen_parent (id INTEGER PRIMARY KEY)",
	}
}

func sqliteGenCases() []genCase {
	return append(expandKinds(sqliteGenKinds(), sqliteGenNames(), sqliteGenSeps), sqliteGenHandCases()...)
}

// TestGeneratedCatalogueSQLite runs the SQLite catalogue in full (it is fast).
func TestGeneratedCatalogueSQLite(t *testing.T) {
	d := freshDB(t, sqliteBackend(), entry{})
	runGenerated(t, d, sqliteGenSetup(), sqliteGenCases(), false)
}

// TestGeneratedDifferentialSQLite: with a fresh token, as the raw driver.
func TestGeneratedDifferentialSQLite(t *testing.T) {
	d := freshDB(t, sqliteBackend(), entry{})
	for _, st := range sqliteGenSetup() {
		d.must(st)
	}
	diffGenerated(t, d, sampleCases(t, sqliteGenCases(), 7, 2), false)
}
