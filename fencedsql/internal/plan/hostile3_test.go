package plan

import (
	"strings"
	"testing"
)

// A third catalogue of hostile SQL, by class: each input reached a guarded table, a
// guard object or a protected setting and was passed through unchanged. Every one
// must now be refused (or, for the token column assigned with :=, rewritten without the
// caller's assignment).
func TestHostileThirdCatalogueRefused(t *testing.T) {
	for _, c := range []struct {
		d   testDialect
		in  string
		why string
	}{
		// A comment before the head keyword hides it from the pre-filter: where a
		// comment ends is the lexer's question (PostgreSQL ends -- at \r too).
		{pgTest, "/*+*/ DO E'BEGIN EXECUTE ''DELETE FROM acc''||''ounts''\\073 END'", "hint-like comment before DO"},
		{pgTest, "/*!*/ DO $$BEGIN NULL; END$$", "executable-comment-like text before DO"},
		{pgTest, "-- x\rDO E'BEGIN NULL\\073 END'", "-- comment ended by \\r"},
		{pgTest, "/*+*/ DROP SCHEMA public CASCADE", "comment before DROP SCHEMA … CASCADE"},
		{pgTest, "-- x\rDROP OWNED BY fenced", "comment before DROP OWNED"},
		{pgTest, "/* a /* nested */ */ ALTER TABLE other DISABLE TRIGGER ALL", "nested comment before ALTER"},
		{pgTest, "/*+*/ CALL p()", "comment before CALL"},
		{pgTest, "/*+*/ EXECUTE p", "comment before EXECUTE"},
		{pgTest, "/*+*/ BEGIN", "comment before BEGIN"},
		{sqliteTest, "/*+*/ BEGIN", "comment before BEGIN (SQLite)"},
		{mysqlTest, "-- x\nSTART TRANSACTION", "comment before START"},
		{mysqlTest, "# x\nXA START 'x'", "hash comment before XA"},
		// A quoted EXPLAIN option is the option.
		{pgTest, `EXPLAIN ("analyze") DELETE FROM accounts`, "quoted ANALYZE option"},
		{pgTest, `EXPLAIN (FORMAT JSON, "analyse") DELETE FROM accounts`, "quoted ANALYSE option"},
		{pgTest, `EXPLAIN ("ANALYZE" true) UPDATE accounts SET balance = 0`, "quoted upper-case option"},
		// Functions that run SQL text built at run time, and calls by an escaped name.
		{pgTest, `SELECT U&"set\005fconfig"('synchronous'||'_commit','off',false)`, "U& name of set_config"},
		{pgTest, `SELECT U&"set!005fconfig" UESCAPE '!' ('a', 'b', true)`, "U& name with UESCAPE"},
		{pgTest, `SELECT pg_catalog.U&"set\005fconfig"('fencedsql'||'_guard.delete_token','5',false)`, "qualified U& name"},
		{pgTest, `SELECT query_to_xml('SELECT set_con'||'fig(''synchronous''||''_commit'', ''off'', false)', false, false, '')`, "query_to_xml"},
		{pgTest, `SELECT * FROM ts_stat('SELECT set_con'||'fig(''a'', ''b'', false)::tsvector')`, "ts_stat"},
		{pgTest, `SELECT dblink_exec('dbname=x', 'DELETE FROM acc' || 'ounts')`, "dblink_exec"},
		// dblink's cursor calls splice their cursor name into FETCH and CLOSE text
		// (red-team rt65a: the planner's list lacked them).
		{pgTest, `SELECT * FROM dblink_fetch('conn', 'c; DELETE FROM accounts', 1) AS t(a int)`, "dblink_fetch"},
		{pgTest, `SELECT "dblink_close"('c; DELETE FROM accounts')`, "quoted dblink_close"},
		{pgTest, `SELECT "query_to_xmlschema"('SELECT 1', false, false, '')`, "quoted query_to_xmlschema"},
		// Statements that write a guarded table without naming it.
		{pgTest, "TRUNCATE users CASCADE", "TRUNCATE … CASCADE"},
		{pgTest, "TRUNCATE TABLE ONLY users RESTART IDENTITY CASCADE", "TRUNCATE … CASCADE with options"},
		{pgTest, `COPY (SELECT 1) TO PROGRAM 'psql -c "DELETE FROM accounts"'`, "COPY … TO PROGRAM"},
		{pgTest, `COPY other FROM PROGRAM 'cat /tmp/x'`, "COPY … FROM PROGRAM"},
		{mysqlTest, "BINLOG 'YWJjZA=='", "BINLOG"},
		// A prepared statement run inside another statement.
		{pgTest, "EXPLAIN ANALYZE EXECUTE stmtcache_abc(1, 999999)", "EXPLAIN ANALYZE EXECUTE"},
		{pgTest, "EXPLAIN (ANALYZE) EXECUTE p(1)", "EXPLAIN (ANALYZE) EXECUTE"},
		{pgTest, "CREATE TABLE t AS EXECUTE p", "CREATE TABLE AS EXECUTE"},
		{pgTest, "CREATE TEMP TABLE t (a) AS EXECUTE p(2)", "CREATE TEMP TABLE (cols) AS EXECUTE"},
		// The mark spelled with escapes in a string-quoted user variable name.
		{mysqlTest, `SELECT @'fencedsq\l_delete_token' := 'x'`, "escaped mark in @'…'"},
		{mysqlTest, `SELECT 1 INTO @'fencedsq\l_delete_token'`, "escaped mark in SELECT … INTO"},
		{mysqlTest, `UPDATE other SET a = (@"fencedsq\l_delete_token" := 5)`, "escaped mark in @\"…\""},
		{mysqlTest, `LOAD DATA INFILE '/tmp/x' INTO TABLE other (@'fencedsq\l_delete_token')`, "escaped mark in LOAD DATA"},
		// A protected setting given an expression after a safe literal.
		{mysqlTest, "SET sql_log_bin = 1 AND 0", "AND after a safe value"},
		{mysqlTest, "SET @@session.sql_log_bin = 1 XOR 1", "XOR after a safe value"},
		{mysqlTest, "SET sql_log_bin = 1 DIV 2", "DIV after a safe value"},
		{mysqlTest, "SET sql_log_bin = '1' IS FALSE", "IS FALSE after a safe value"},
		{mysqlTest, "SET skip_replication = 0 OR 1", "OR after a safe value"},
		{mysqlTest, "SET SESSION skip_replication = 0 IS NOT TRUE", "IS NOT after a safe value"},
		{mysqlTest, "SET a = 1, sql_log_bin = 1 NOT LIKE 1", "NOT LIKE in a later item"},
		// Text the lexer cannot read that the server can: refused, not passed (MySQL
		// accepts identifiers that start with a digit, PostgreSQL ones that start with U+FEFF).
		{mysqlTest, "PREPARE 1s FROM CONCAT('DELETE FROM acc','ounts WHERE id = 1')", "PREPARE of a digit-led name"},
		{mysqlTest, "CALL 1p()", "CALL of a digit-led name"},
		{pgTest, "DO $$BEGIN EXECUTE 'DELETE FROM acc'||'ounts WHERE id = 1'; END$$; SELECT 1 AS \ufeffx", "DO before an unreadable statement"},
		{pgTest, "TRUNCATE users, \ufeffx CASCADE", "TRUNCATE CASCADE with an unreadable name"},
		{pgTest, "EXPLAIN ANALYZE CREATE TABLE t2 AS EXECUTE stmt_1", "EXPLAIN ANALYZE CREATE TABLE AS EXECUTE"},
		{pgTest, "EXPLAIN (ANALYZE) CREATE TABLE t2 AS EXECUTE stmt_1(1) WITH NO DATA", "EXPLAIN (ANALYZE) … AS EXECUTE … WITH NO DATA"},
		// MariaDB compares routine names accent-insensitively.
		{mysqlTest, "DROP FUNCTION fencédsql_fence_accounts", "accented guard function name"},
		{mysqlTest, "DROP FUNCTION IF EXISTS FÉNCEDSQL_fence_accounts", "accented upper-case name"},
		{mysqlTest, "DROP FUNCTION `fencedſql_fence_accounts`", "long s in a quoted name"},
		{mysqlTest, "CREATE OR REPLACE FUNCTION fencédsql_fence_accounts(cur BIGINT, tok BIGINT, fl BIGINT) RETURNS INT RETURN 1", "accented CREATE OR REPLACE"},
		{mysqlTest, "SELECT fencédsql_fence_accounts(1, 2, 3) FROM other", "accented guard function call"},
		// Session variables that make replicas drop the session's writes, and SQLite's
		// durability pragmas.
		{mysqlTest, "SET SESSION server_id = 12345", "server_id"},
		{mysqlTest, "SET @@session.gtid_domain_id = 99", "gtid_domain_id"},
		{mysqlTest, "SET gtid_seq_no = 1", "gtid_seq_no"},
		{mysqlTest, "SET completion_type = 'CHAIN'", "completion_type CHAIN"},
		{mysqlTest, "SET `autocommit` = 0", "quoted autocommit"},
		{mysqlTest, "SET @@session.`autocommit` = 0", "quoted session autocommit"},
		{mysqlTest, "SET STATEMENT max_statement_time=0 FOR EXECUTE IMMEDIATE CONCAT('UPDATE acc','ounts SET balance=666')", "SET STATEMENT … FOR EXECUTE IMMEDIATE"},
		{mysqlTest, "SET STATEMENT max_statement_time=0 FOR START TRANSACTION", "SET STATEMENT … FOR START TRANSACTION"},
		{mysqlTest, "SET STATEMENT max_statement_time=0 FOR COMMIT", "SET STATEMENT … FOR COMMIT"},
		{mysqlTest, "SET STATEMENT max_statement_time=0 FOR CALL p()", "SET STATEMENT … FOR CALL"},
		{mysqlTest, "SET STATEMENT max_statement_time=0 FOR XA START 'x'", "SET STATEMENT … FOR XA"},
		{mysqlTest, "SET STATEMENT max_statement_time=0 FOR SAVEPOINT a", "SET STATEMENT … FOR SAVEPOINT"},
		{mysqlTest, "SET STATEMENT max_statement_time=0 FOR LOCK TABLES other WRITE", "SET STATEMENT … FOR LOCK TABLES"},
		{mysqlTest, "SET STATEMENT max_statement_time=0 FOR BINLOG 'x'", "SET STATEMENT … FOR BINLOG"},
		{mysqlTest, "SET STATEMENT max_statement_time=0 FOR UPDATE accounts SET balance = 1", "SET STATEMENT … FOR a guarded write"},
		{mysqlTest, "SET STATEMENT max_statement_time=0", "SET STATEMENT without FOR"},
		{mysqlTest, "SET @@completion_type = 1", "completion_type 1"},
		{mysqlTest, "SET SESSION completion_type = RELEASE", "completion_type RELEASE"},
		{mysqlTest, "SET STATEMENT completion_type = 1 FOR SELECT 1", "completion_type in SET STATEMENT"},
		{mysqlTest, "SET gtid_next = '3E11FA47-71CA-11E1-9E33-C80AA9429562:23'", "gtid_next"},
		{sqliteTest, "PRAGMA journal_mode = OFF", "journal_mode OFF"},
		{sqliteTest, "PRAGMA main.journal_mode(off)", "journal_mode(off)"},
		{sqliteTest, "PRAGMA synchronous = 0", "synchronous 0"},
		{sqliteTest, "PRAGMA synchronous(OFF)", "synchronous(OFF)"},
		// A name split across adjacent string literals, which the server joins.
		{pgTest, "CREATE FOREIGN TABLE ft (id bigint) SERVER loop OPTIONS (table_name 'acc'\n'ounts')", "guarded name in adjacent literals (DDL)"},
		{pgTest, "ALTER FOREIGN TABLE ft OPTIONS (SET table_name 'ac'\n'co'\n'unts')", "guarded name in three adjacent literals"},
		{pgTest, "CREATE FOREIGN TABLE ft (id bigint) SERVER loop OPTIONS (table_name 'fencedsql'\n'_floor')", "guard object in adjacent literals"},
		{mysqlTest, "SET @x = 'acc' 'ounts'", "guarded name in adjacent literals (MySQL user variable)"},
	} {
		_, err := newTestRewriter(t, c.d, Guard("accounts"), WithDeleteFence()).Rewrite(c.in, false)
		if !isRefusal(err) {
			t.Errorf("%s (%s): %q: err = %v, want a refusal", c.why, c.d.name, c.in, err)
		}
	}
}

// A body split across adjacent literals is judged joined, even where DDL is allowed
// (a red-team pass: the function set synchronous_commit=off for the pooled session).
func TestSplitBodyRefusedWithDDL(t *testing.T) {
	for _, in := range []string{
		"CREATE FUNCTION f() RETURNS text LANGUAGE sql AS 'SELECT set_con'\n'fig(''synchronous_commit'', ''off'', false)'",
		"CREATE PROCEDURE p() LANGUAGE sql AS 'SET synchronous'\n'_commit = off'",
		"CREATE PROCEDURE p() LANGUAGE sql AS 'SET synch' 'ronous' '_commit = off'",
	} {
		rw := newTestRewriter(t, pgTest, Guard("accounts"), WithDDL(true), WithDynamicSQL(true))
		if _, err := rw.Rewrite(in, false); !isRefusal(err) {
			t.Errorf("%q: err = %v, want a refusal", in, err)
		}
		if _, err := rw.Rewrite(strings.NewReplacer("'\n'", "", "' '", "").Replace(in), false); !isRefusal(err) {
			t.Errorf("the unsplit control of %q: err = %v, want a refusal", in, err)
		}
	}
}

// What the classes above must not refuse: the same shapes without the hostile part.
func TestHostileThirdCatalogueNearMissesPass(t *testing.T) {
	for _, c := range []struct {
		d  testDialect
		in string
	}{
		{pgTest, "/* app=checkout */ SELECT 1"},
		{pgTest, "-- note\nSELECT id FROM other"},
		{mysqlTest, "/*+ BKA(other) */ SELECT * FROM other"},
		{pgTest, `EXPLAIN ("verbose") SELECT * FROM accounts`},
		{pgTest, "EXPLAIN EXECUTE p(1)"},
		{pgTest, "TRUNCATE users"},
		{pgTest, "COPY (SELECT 1) TO STDOUT"},
		{pgTest, "CREATE TABLE t AS SELECT 1 AS execute_count"},
		{pgTest, "SELECT table_to_xml('other', false, false, '')"},
		{mysqlTest, "SELECT @'x' := 1"},
		{mysqlTest, "SET sql_log_bin = 1"},
		{mysqlTest, "SET STATEMENT sql_log_bin = 1 FOR SELECT 1"},
		{mysqlTest, "SET sql_log_bin = 1, @a = 2"},
		{mysqlTest, "SET completion_type = 'NO_CHAIN'"},
		{mysqlTest, "SET STATEMENT max_statement_time=5 FOR SELECT * FROM other"},
		{mysqlTest, "SET STATEMENT max_statement_time=5 FOR UPDATE other SET a = 1"},
		{mysqlTest, "SET SESSION completion_type = 0"},
		{pgTest, "SET synchronous_commit TO on"},
		{pgTest, "ALTER ROLE app SET synchronous_commit = on"},
		{mysqlTest, "SELECT café_total FROM other"},
		{pgTest, "EXPLAIN SELECT count(*) AS execute FROM other"},
		{pgTest, "CREATE TABLE t AS SELECT 1 AS execute"},
		{mysqlTest, "DROP FUNCTION fencéd_other"},
		{mysqlTest, "SELECT @@server_id"},
		{mysqlTest, "SET gtid_next = AUTOMATIC"},
		{sqliteTest, "PRAGMA journal_mode = WAL"},
		{sqliteTest, "PRAGMA journal_mode(wal)"},
		{sqliteTest, "PRAGMA journal_mode"},
		{sqliteTest, "PRAGMA synchronous = NORMAL"},
	} {
		p, err := newTestRewriter(t, c.d, Guard("accounts"), WithDeleteFence()).Rewrite(c.in, false)
		if err != nil || p.Kind != KindPass {
			t.Errorf("%s: %q: plan %v, err = %v, want it passed", c.d.name, c.in, p, err)
		}
	}
}

// The token and version columns assigned with MySQL's := are the caller's assignments
// like those with =: dropped, so the wrapper's own decide the row.
func TestColonEqualsFenceAssignmentDropped(t *testing.T) {
	for _, in := range []string{
		"UPDATE accounts SET balance = 1, fence_token := 0 WHERE id = 1",
		"UPDATE accounts SET balance = 1, version := 41 WHERE id = 1",
		"INSERT INTO accounts (id, balance) VALUES (1, 2) ON DUPLICATE KEY UPDATE fence_token := 0, balance = 3",
	} {
		p, err := newTestRewriter(t, mysqlTest, Guard("accounts")).Rewrite(in, false)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if strings.Contains(p.SQL, ":= 0") || strings.Contains(p.SQL, ":= 41") {
			t.Errorf("%q: the caller's assignment is kept:\n  %s", in, p.SQL)
		}
	}
}

// PostgreSQL truncates an identifier's bytes to 63 and folds ASCII only: a name of 21
// KELVIN SIGNs (63 bytes) with more after it is the guarded table to the server, so it
// is to the planner too (folding first moved the cut: the write passed unfenced).
func TestKeyTruncatesBeforeFolding(t *testing.T) {
	kelvin := strings.Repeat("\u212a", 21) // 63 bytes
	rw := newTestRewriter(t, pgTest, Guard(kelvin))
	for _, in := range []string{
		"INSERT INTO " + kelvin + "zzz (id, balance) VALUES (2, 1)",
		"UPDATE " + kelvin + "zzz SET balance = 1 WHERE id = 1",
	} {
		p, err := rw.Rewrite(in, false)
		if err != nil || p.Kind == KindPass {
			t.Errorf("%q: plan %v, err %v: want it fenced", in, p, err)
		}
	}
}
