package redteam

import "testing"

// cX: MariaDB executable comments whose content is dynamic SQL or text-level
// transaction control, spelled so that the text never names the guarded table (issue
// 22 item 1). Each entry first changes data through the raw driver; through the
// wrapper it is refused with any token and changes nothing.
const cX = "10_exec_comments"

// concatUpdate builds "UPDATE accounts …" at run time: the text never spells the name.
const concatUpdate = "EXECUTE IMMEDIATE CONCAT('UPDATE acc', 'ounts SET balance = 0')"

func commentEntries() []entry {
	one := func(name, sql string, want expect) entry {
		return entry{class: cX, name: name, steps: []step{x(sql)}, want: want}
	}
	zeroProc := "CREATE PROCEDURE wipe() " + concatUpdate
	return []entry{
		// dynamic SQL inside every prefix form
		one("bang_execute_immediate", "/*! "+concatUpdate+" */", Refused),
		one("bang_glued_execute_immediate", "/*!"+concatUpdate+"*/", Refused),
		one("mysql_version_execute_immediate", "/*!50000 "+concatUpdate+" */", Refused),
		one("mariadb_version_execute_immediate", "/*!100000 EXECUTE IMMEDIATE CONCAT('DELETE FROM acc', 'ounts WHERE id = 1') */", Refused),
		one("mariadb_only_execute_immediate", "/*M! "+concatUpdate+" */", Refused),
		one("mariadb_only_version_execute_immediate", "/*M!100000 "+concatUpdate+" */", Refused),
		one("hint_then_execute_immediate", "/*+ NO_ICP(accounts) */ "+concatUpdate, Refused),
		one("begin_not_atomic", "/*!BEGIN NOT ATOMIC "+concatUpdate+"; END*/", Refused),
		one("second_statement", "SELECT 1; /*! "+concatUpdate+" */", Refused),
		one("skipped_by_version_then_statement", "/*!999999 SELECT 1; */ "+concatUpdate, Refused),
		{class: cX, name: "prepare_execute", want: Refused, steps: []step{
			x("SET @s = CONCAT('UPDATE acc', 'ounts SET balance = 0')"), x("/*!PREPARE p FROM @s*/"), x("/*!EXECUTE p*/")}},
		{class: cX, name: "call", want: Refused, setup: []string{zeroProc}, steps: []step{x("/*!CALL wipe()*/")}},
		{class: cX, name: "call_mariadb_only", want: Refused, setup: []string{zeroProc}, steps: []step{x("/*M!100000 CALL wipe() */")}},
		// text-level transaction control
		{class: cX, name: "start_transaction_commit", want: Refused, steps: []step{
			x("/*!START TRANSACTION*/"), x("DELETE FROM accounts WHERE id = 1"), x("/*!COMMIT*/")}},
		{class: cX, name: "begin_commit_versioned", want: Refused, steps: []step{
			x("/*!50000 BEGIN */"), x("UPDATE accounts SET balance = 0 WHERE id = 2"), x("/*M!100000 COMMIT */")}},
		{class: cX, name: "set_autocommit_0", want: Refused, steps: []step{
			x("/*!SET autocommit = 0*/"), x("UPDATE accounts SET balance = 0 WHERE id = 1"), x("COMMIT")}},
		{class: cX, name: "skipped_comment_then_start", want: Refused, steps: []step{
			x("/*!999999 SELECT 1, */ START TRANSACTION"), x("DELETE FROM accounts WHERE id = 3"), x("COMMIT")}},
		// routine DDL in an executable comment (mysqldump's form)
		{class: cX, name: "create_procedure", want: Refused,
			steps: []step{x("/*!" + zeroProc + " */")},
			then:  []string{"CALL wipe()"}},
		// harmless: what dumps and ORMs write passes unchanged
		one("harmless_set_names", "/*!40101 SET NAMES utf8mb4 */", Harmless),
		one("harmless_mariadb_set", "/*M!100616 SET @redteam_x = 1 */", Harmless),
		{class: cX, name: "harmless_sql_no_cache", want: Harmless, steps: []step{s("SELECT /*!40001 SQL_NO_CACHE */ id, balance FROM accounts WHERE id = 1")}},
		{class: cX, name: "harmless_hint", want: Harmless, steps: []step{s("SELECT /*+ MAX_EXECUTION_TIME(1000) */ id FROM accounts ORDER BY id")}},
	}
}

func TestExecCommentsMariaDB(t *testing.T) { runCatalogue(t, mysqlBackend(), commentEntries()) }
