package plan

import "testing"

// A statement that may change how MySQL/MariaDB read SQL, followed by another in one
// text, is refused (red-team rt37e F1); other multi-statement texts are planned as
// before, and PostgreSQL and SQLite texts are not judged by this rule.
func TestReadingChangeFollowedRefused(t *testing.T) {
	refused := []string{
		"SET sql_mode = 'NO_BACKSLASH_ESCAPES'; SELECT 'a\\'",
		"SET NAMES sjis; SELECT 1",
		"set names 'gbk' ; select 1",
		"SET CHARACTER SET sjis; SELECT 1",
		"SET CHARSET sjis; SELECT 1",
		"SET @@session.sql_mode = ''; SELECT 1",
		"SET @@SQL_MODE = ''; SELECT 1",
		"SET SESSION character_set_client = 'sjis'; SELECT 1",
		"SET GLOBAL sql_mode = ''; SELECT 1",
		"SET @x = 1, sql_mode = ''; SELECT 1",
		"SET `sql_mode` = ''; SELECT 1",
		"PREPARE s FROM 'SET sql_mode = ''''' ; EXECUTE s; SELECT 1",
		"EXECUTE IMMEDIATE 'SET NAMES sjis'; SELECT 1",
		"BEGIN NOT ATOMIC SET sql_mode = ''; END; SELECT 1",
		"/*!40101 SET NAMES sjis */; SELECT 1",
		"SELECT 1; SET sql_mode = ''; SELECT 2",
		"OPTIMIZE_ME; SELECT 1",
		"SELECT CASE WHEN 1 THEN 2 END; SET NAMES sjis; SELECT 1",
		"SET @x = CASE WHEN 1 THEN 2 END, sql_mode = ''; SELECT 1",
		"lbl: BEGIN NOT ATOMIC SET NAMES sjis; END; SELECT 1",
	}
	for _, q := range refused {
		rw := newTestRewriter(t, mysqlTest)
		if _, err := rw.Rewrite(q, false); !isRefusal(err) {
			t.Errorf("%s: %v; want a refusal", q, err)
		}
	}
	planned := []string{
		"SET sql_mode = 'ANSI_QUOTES'",
		"SELECT 1; SET NAMES utf8mb4",
		"SET NAMES utf8mb4;",
		"SET @x = 1; SELECT @x",
		"SET @x = (SELECT 1), @`y` = 2; SELECT @x",
		"SET foreign_key_checks = 0; CREATE TABLE t (id INT); INSERT INTO t VALUES (1)",
		"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; SELECT 1",
		"SET STATEMENT max_statement_time = 1 FOR SELECT 1; SELECT 2",
		"SELECT 1; SELECT 2",
		"SET @x = CASE WHEN 1 THEN 2 END; SELECT 1",
		"SELECT (SELECT 1); SELECT 2;",
	}
	for _, q := range planned {
		rw := newTestRewriter(t, mysqlTest)
		if _, err := rw.Rewrite(q, false); err != nil {
			t.Errorf("%s: %v; want it planned", q, err)
		}
	}
	for _, d := range []testDialect{pgTest, sqliteTest} {
		rw := newTestRewriter(t, d)
		if _, err := rw.Rewrite("SET x = 1; SELECT 1", false); err != nil {
			t.Errorf("%s: SET x = 1; SELECT 1: %v; want it planned", d.name, err)
		}
	}
}
