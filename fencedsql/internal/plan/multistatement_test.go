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
		"SET @@session.sql_mode = 'ANSI_QUOTES'; SELECT 1",
		"SET @@SQL_MODE = 'ORACLE'; SELECT 1",
		"SET SESSION character_set_client = 'sjis'; SELECT 1",
		"SET GLOBAL sql_mode = 'ANSI'; SELECT 1",
		"SET @x = 1, sql_mode = 'PIPES_AS_CONCAT'; SELECT 1",
		"SET `sql_mode` = 'STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES'; SELECT 1",
		"PREPARE s FROM 'SET sql_mode = ''''' ; EXECUTE s; SELECT 1",
		"EXECUTE IMMEDIATE 'SET NAMES sjis'; SELECT 1",
		"BEGIN NOT ATOMIC SET sql_mode = ''; END; SELECT 1",
		"/*!40101 SET NAMES sjis */; SELECT 1",
		"SELECT 1; SET sql_mode = 'IGNORE_SPACE'; SELECT 2",
		"SET sql_mode = @OLD_SQL_MODE; SELECT 1",
		"SET sql_mode = CONCAT('ANSI', ''); SELECT 1",
		"SET sql_mode = '', NAMES sjis; SELECT 1",
		"SET NAMES utf8mb4 COLLATE x, CHARSET gbk; SELECT 1",
		"SET character_set_client = big5; SELECT 1",
		"SET NAMES 'utf8mb4\\'; SELECT 1",
		"SELECT CASE WHEN 1 THEN 2 END; SET NAMES sjis; SELECT 1",
		"SET @x = CASE WHEN 1 THEN 2 END, sql_mode = 'ANSI_QUOTES'; SELECT 1",
		"lbl: BEGIN NOT ATOMIC SET NAMES sjis; END; SELECT 1",
		// red-team rt38a F1–F3: identifiers spelt like block words, CHAR SET.
		"SELECT 1 AS begin, 2; SET NAMES sjis; SELECT 1",
		"SELECT begin FROM t; SET NAMES sjis; SELECT 1",
		"UPDATE t SET begin = 1; SET sql_mode = 'NO_BACKSLASH_ESCAPES'; SELECT 1",
		"SELECT a.case FROM t a; SET NAMES sjis; SELECT 1",
		"SET CHAR SET sjis; SELECT 1",
		"SET @x = 1, CHAR SET sjis; SELECT 1",
		"BEGIN NOT ATOMIC IF 1 THEN SET NAMES sjis; END IF; END; SELECT 1",
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
		"0;0",
		"OPTIMIZE_ME; SELECT 1",
		// Common migration and dump headers: settings that read as the wrapper reads.
		"SET NAMES utf8mb4; CREATE TABLE t (id INT); INSERT INTO t VALUES (1)",
		"SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci; SELECT 1",
		"SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO'; CREATE TABLE t (id INT)",
		"SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ZERO_DATE'; SELECT 1",
		"SET sql_mode = ''; SELECT 1",
		"SET CHARACTER SET latin1; SELECT 1",
		"SET character_set_client = utf8mb4, @x = 1; SELECT 1",
		"SELECT 1 AS begin; SELECT 2",
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

// A compound statement is one statement to the rule (the server parses it whole): the
// dynamic SQL or SET inside it is refused only when another statement follows its
// END; an identifier spelt like a block word does not extend it, and a count that does
// not close falls back to judging each piece.
func TestReadingChangeCompound(t *testing.T) {
	run := []string{
		"BEGIN NOT ATOMIC EXECUTE IMMEDIATE CONCAT('COM','MIT'); SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'x'; END",
		"BEGIN NOT ATOMIC SET NAMES sjis; SELECT 1; END;",
		"lbl: BEGIN NOT ATOMIC IF 1 THEN BEGIN SET NAMES sjis; SELECT 2; END; END IF; END lbl",
		"BEGIN NOT ATOMIC SELECT 1; END; SELECT 2",
		"BEGIN NOT ATOMIC CASE 1 WHEN 1 THEN BEGIN SELECT 1; END; ELSE SELECT 2; END CASE; SELECT CASE WHEN 1 THEN 2 END; END",
	}
	for _, q := range run {
		rw := newTestRewriter(t, mysqlTest, WithDynamicSQL(true))
		if _, err := rw.Rewrite(q, false); err != nil {
			t.Errorf("%s: %v; want it planned", q, err)
		}
	}
	refused := []string{
		"BEGIN NOT ATOMIC EXECUTE IMMEDIATE 'SET NAMES sjis'; END; SELECT 1",
		"BEGIN NOT ATOMIC SET NAMES sjis; END; SELECT 1",
		"BEGIN NOT ATOMIC END; SET NAMES sjis; SELECT 1",
		"BEGIN NOT ATOMIC SELECT 1 AS begin; END; SET NAMES sjis; SELECT 1",
		"BEGIN NOT ATOMIC SELECT 1 AS begin; SET NAMES sjis; SELECT 1",
		"lbl: LOOP SELECT 1; END LOOP begin; SET NAMES sjis; SELECT 1",
		"BEGIN NOT ATOMIC SELECT CASE WHEN 1 THEN begin ELSE 0 END FROM t; END; SET NAMES sjis; SELECT '\x95\\'; SELECT 1; -- '; END",
		"BEGIN NOT ATOMIC SELECT CASE WHEN 1 THEN 1 ELSE begin + 0 END FROM t; END; SET NAMES sjis; SELECT 1; END",
	}
	for _, q := range refused {
		rw := newTestRewriter(t, mysqlTest, WithDynamicSQL(true))
		if _, err := rw.Rewrite(q, false); !isRefusal(err) {
			t.Errorf("%s: %v; want a refusal", q, err)
		}
	}
}
