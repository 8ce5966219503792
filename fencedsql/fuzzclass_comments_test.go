package fencedsql

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// Class tests for MySQL/MariaDB executable comments (internal/plan/execcomment.go) and routine DDL
// (routine.go): generated shapes, each judged against the rule it must follow and run
// through the fuzz oracle's invariants.

// execPrefixes are every opening form of an executable comment: always run, run from
// a MySQL (5 digits) or MariaDB (6 digits) version on, MariaDB only.
// (A six-digit prefix glued to its content, /*!100000SELECT, is refused: MySQL reads
// the sixth digit as the start of the content; see TestExecCommentsUnclassifiable.)
var execPrefixes = []string{"/*!", "/*! ", "/*!50000 ", "/*!50000", "/*!100000 ", "/*M!", "/*M! ", "/*M!100000 "}

// execContents are statements as they could stand in an executable comment: those the
// allowlist refuses on a pool with guarded tables (dynamic SQL, text-level transaction
// control, routine DDL) and those it passes.
var execContents = []struct {
	sql     string
	dynamic bool // refused as dynamic SQL: passes under WithDynamicSQL(true)
}{
	{"EXECUTE IMMEDIATE CONCAT('UPDATE acc', 'ounts SET balance = 0')", true},
	{"EXECUTE IMMEDIATE 'DELETE FROM other'", true},
	{"PREPARE p FROM @s", true},
	{"EXECUTE p", true},
	{"CALL proc()", true},
	{"DO wipe()", true},
	{"BEGIN NOT ATOMIC UPDATE other SET x = 1; END", true},
	{"START TRANSACTION", false},
	{"START TRANSACTION READ WRITE", false},
	{"BEGIN", false},
	{"BEGIN WORK", false},
	{"COMMIT", false},
	{"ROLLBACK", false},
	{"ROLLBACK WORK", false},
	{"SET autocommit = 0", false},
	{"SET @@session.autocommit = OFF", false},
	{"XA START 'x'", false},
	{"LOCK TABLES other WRITE", false},
	{"CREATE PROCEDURE p() EXECUTE IMMEDIATE CONCAT('UPDATE acc', 'ounts SET x = 1')", false},
	{"CREATE DEFINER=`root`@`localhost` TRIGGER t AFTER INSERT ON other FOR EACH ROW SET @x = 1", false},
}

// execHarmless pass inside an executable comment as they pass outside one.
var execHarmless = []string{
	"SELECT 1", "SET NAMES utf8mb4", "SET @x = 1", "SAVEPOINT s", "ROLLBACK TO SAVEPOINT s",
	"SET SESSION max_statement_time = 30", "UPDATE other SET x = 1", "SHOW TABLES",
}

// execShapes place content in a text: the whole statement, a second statement inside
// the comment, the comment as a second statement, and the statement after a hint.
var execShapes = []string{"%p%c*/", "SELECT 1 %p; %c */", "SELECT 1; %p%c */", "%p%c; */ SELECT 1"}

func execShape(shape, prefix, content string) string {
	return strings.NewReplacer("%p", prefix, "%c", content).Replace(shape)
}

func refused(err error) bool { return errors.Is(err, ErrUnsupported) }

// TestExecCommentsJudgedAsWritten: every prefix form × every content × every shape on
// a MariaDB pool with guarded tables is refused exactly when the content written out
// is (dynamic SQL only without WithDynamicSQL), never on a pool without, and each
// shape satisfies the fuzz oracle's invariants.
func TestExecCommentsJudgedAsWritten(t *testing.T) {
	guarded := newTestRewriter(t, mysqlTest, Guard("accounts"))
	dynamicOK := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDynamicSQL(true))
	plain := newTestRewriter(t, mysqlTest, WithDDL(false))
	ft := newFzTarget(t, mysqlTest)
	for _, c := range execContents {
		// the same answer outside a comment
		if _, err := guarded.Rewrite(c.sql, false); !refused(err) {
			t.Fatalf("written out, %q is not refused (%v): the class test's premise is wrong", c.sql, err)
		}
		for _, pre := range execPrefixes {
			for _, sh := range execShapes {
				sql := execShape(sh, pre, c.sql)
				if _, err := guarded.Rewrite(sql, false); !refused(err) {
					t.Errorf("guarded pool: rewrite(%q) = %v; want ErrUnsupported", sql, err)
				}
				out := execShape(sh, " ", c.sql)
				out = strings.Replace(out, "*/", " ", 1)
				_, errOutside := dynamicOK.Rewrite(out, false)
				// (a six-digit prefix has a second reading, MySQL's, with the sixth digit in
				// the content: it may be refused for that reading alone)
				if _, err := dynamicOK.Rewrite(sql, false); refused(err) != refused(errOutside) && !strings.Contains(pre, "100000") {
					t.Errorf("WithDynamicSQL: rewrite(%q) = %v, but written out (%q): %v (one answer per question)", sql, err, out, errOutside)
				}
				if p, err := plain.Rewrite(sql, false); err != nil || p.Kind != plan.KindPass {
					t.Errorf("no guarded table: rewrite(%q) = %v, %v; want pass-through", sql, p, err)
				}
				ft.check(t, sql)
			}
			// an optimizer hint before the statement hides nothing
			hinted := "/*+ MAX_EXECUTION_TIME(1000) */ " + c.sql
			if _, err := guarded.Rewrite(hinted, false); !refused(err) {
				t.Errorf("guarded pool: rewrite(%q) = %v; want ErrUnsupported", hinted, err)
			}
		}
	}
	for _, h := range execHarmless {
		for _, pre := range execPrefixes {
			for _, sh := range []string{"%p%c*/", "SELECT 1 %p, 2 */", "%p%c */ -- x"} {
				sql := execShape(sh, pre, h)
				if p, err := guarded.Rewrite(sql, false); err != nil || p.Kind != plan.KindPass {
					t.Errorf("guarded pool: rewrite(%q) = %v, %v; want pass-through (it passes written out)", sql, p, err)
				}
				ft.check(t, sql)
			}
		}
		for _, hint := range []string{"/*+ h */ ", "/*+ BKA(t) NO_ICP(t) */"} {
			if p, err := guarded.Rewrite(hint+h, false); err != nil || p.Kind != plan.KindPass {
				t.Errorf("guarded pool: rewrite(%q) = %v, %v; want pass-through", hint+h, p, err)
			}
		}
	}
}

// TestExecCommentReadings: a conditional comment (a version prefix, /*M!) may be run or
// skipped, and the server's product and version decide: every combination is judged.
func TestExecCommentReadings(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("accounts"))
	for _, sql := range []string{
		"/*M! SELECT */ COMMIT",                          // MySQL skips it: COMMIT
		"/*!999999 SELECT */ COMMIT",                     // an old server skips it
		"/*!999999 SELECT */ /*! COMMIT */",              // skipped, then run: COMMIT
		"/*!50000 SELECT 1 AS */ /*M!100000 ROLLBACK */", // MySQL: SELECT 1 AS, MariaDB: ROLLBACK
		"/*!999999 SELECT x FROM */ accounts WHERE id = 1 FOR UPDATE",
		// run as written, a locking read (a claim); skipped, a plain read
		"SELECT * FROM accounts WHERE id = 1 /*!50000 FOR UPDATE */",
		"SELECT * FROM accounts WHERE id = 1 /*M! FOR UPDATE */",
		"/*!50000 INSERT IGNORE INTO other (x) SELECT x FROM */ accounts",
		"INSERT /*! IGNORE */ INTO accounts (id) VALUES (1)",
		"UPDATE accounts SET balance = 0 WHERE id = 1 /*!; UPDATE other SET x = 1 */",
	} {
		if _, err := rw.Rewrite(sql, false); !refused(err) {
			t.Errorf("rewrite(%q) = %v; want ErrUnsupported", sql, err)
		}
	}
	// Readings that agree pass or are planned as written.
	for _, c := range []struct {
		sql  string
		kind plan.Kind
	}{
		{"SELECT /*!40001 SQL_NO_CACHE */ * FROM accounts", plan.KindPass},
		{"/*!40101 SET NAMES utf8mb4 */", plan.KindPass},
		{"/*M!100616 SET NOTE_VERBOSITY=@@NOTE_VERBOSITY, NOTE_VERBOSITY=0 */", plan.KindPass},
		{"SELECT /*+ MAX_EXECUTION_TIME(100) */ id FROM accounts WHERE id = 1", plan.KindPass},
	} {
		p, err := rw.Rewrite(c.sql, false)
		if err != nil || p.Kind != c.kind {
			t.Errorf("rewrite(%q) = %v, %v; want %v", c.sql, p, err, c.kind)
		}
	}
}

// TestExecCommentsUnclassifiable: an executable comment the lexer cannot delimit, a
// version prefix that is neither five nor six digits, or too many conditional comments
// are refused on a pool with guarded tables and pass without one.
func TestExecCommentsUnclassifiable(t *testing.T) {
	guarded := newTestRewriter(t, mysqlTest, Guard("accounts"))
	plain := newTestRewriter(t, mysqlTest, WithDDL(false))
	many := "SELECT 1" + strings.Repeat(" /*!50000 + 1 */", 7)
	for _, sql := range []string{
		"/*!1 SELECT 1 */", "/*!1234 SELECT 1 */", "/*!1234567 SELECT 1 */", "/*!100000SELECT 1 */", "/*M!100000SET @x = 1*/",
		"/*! SELECT 1", "/*M! SELECT 1 -- */\n */", "/*! SELECT '*/' */", "/*! SELECT 1 /* x */ */",
		"/*! SELECT 1 # */\n */", "/*!100000SELECT 1 */ /*!50000 x", "SELECT 1 /*+ unterminated",
		many,
	} {
		if _, err := guarded.Rewrite(sql, false); !refused(err) {
			t.Errorf("guarded pool: rewrite(%q) = %v; want ErrUnsupported", sql, err)
		}
		if _, err := plain.Rewrite(sql, false); err != nil {
			t.Errorf("no guarded table: rewrite(%q) = %v; want pass-through", sql, err)
		}
	}
	// Six conditional comments: 64 readings, judged.
	if p, err := guarded.Rewrite("SELECT 1"+strings.Repeat(" /*!50000 + 1 */", 6), false); err != nil || p.Kind != plan.KindPass {
		t.Errorf("six conditional comments: %v, %v; want pass-through", p, err)
	}
}

// TestExecCommentsOtherDialects: on PostgreSQL and SQLite /*! … */ is a plain comment,
// never run: its content changes nothing.
func TestExecCommentsOtherDialects(t *testing.T) {
	for _, d := range []testDialect{pgTest, sqliteTest} {
		rw := newTestRewriter(t, d, Guard("accounts"))
		ft := newFzTarget(t, d)
		for _, c := range execContents {
			for _, pre := range execPrefixes {
				sql := pre + c.sql + " */ SELECT 1"
				if p, err := rw.Rewrite(sql, false); err != nil || p.Kind != plan.KindPass {
					t.Errorf("%s: rewrite(%q) = %v, %v; want pass-through (a plain comment)", d.name, sql, p, err)
				}
				ft.check(t, sql)
			}
		}
	}
}

// routineShapes are routine DDL per dialect: every kind, with bodies in every quoting
// form, none naming a guarded table where the scan can read it.
var routineShapes = map[string][]string{
	"postgres": func() []string {
		bodies := []string{
			"$$ UPDATE other SET x = 1 $$", "$b$ UPDATE other SET x = 1 $b$", "'UPDATE other SET x = 1'",
			`E'UPDATE \x61ccounts SET balance = 0'`, `U&'UPDATE \0061ccounts SET balance = 0'`,
			`$$ UPDATE U&"acc\006Funts" SET balance = 0 $$`, `E'UPDATE acc\157unts SET balance = 0'`,
			"$$ BEGIN EXECUTE 'UPDATE acc' || 'ounts SET balance = 0'; END $$",
			"$$ BEGIN EXECUTE format('UPDATE %I SET balance = 0', 'acc' || 'ounts'); END $$",
		}
		heads := []string{
			"CREATE FUNCTION f() RETURNS void LANGUAGE sql AS %b",
			"CREATE OR REPLACE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS %b",
			"create or replace function public.f() returns void as %b language plpgsql",
			"CREATE PROCEDURE p() LANGUAGE plpgsql AS %b",
			"CREATE OR REPLACE PROCEDURE p() LANGUAGE sql AS %b",
			"/* c */ CREATE FUNCTION f() RETURNS void LANGUAGE sql AS %b",
			"SELECT 1; CREATE FUNCTION f() RETURNS void LANGUAGE sql AS %b",
		}
		var out []string
		for _, h := range heads {
			for _, b := range bodies {
				out = append(out, strings.ReplaceAll(h, "%b", b))
			}
		}
		return append(out,
			"CREATE FUNCTION f() RETURNS void LANGUAGE sql BEGIN ATOMIC UPDATE other SET x = 1; END",
			"CREATE TRIGGER t AFTER INSERT ON other FOR EACH ROW EXECUTE FUNCTION f()",
			"CREATE OR REPLACE TRIGGER t AFTER INSERT ON other FOR EACH ROW EXECUTE FUNCTION f()",
			"CREATE CONSTRAINT TRIGGER t AFTER INSERT ON other FOR EACH ROW EXECUTE FUNCTION f()",
			"CREATE EVENT TRIGGER e ON ddl_command_end EXECUTE FUNCTION f()",
			"CREATE RULE r AS ON INSERT TO other DO ALSO SELECT f()",
			"CREATE OR REPLACE RULE r AS ON UPDATE TO other DO INSTEAD NOTHING",
			"CREATE SCHEMA s CREATE TABLE t (x int) CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION f()",
			"ALTER FUNCTION f() SECURITY DEFINER",
			"ALTER TRIGGER t ON other RENAME TO u",
		)
	}(),
	"mysql": {
		"CREATE PROCEDURE p() EXECUTE IMMEDIATE CONCAT('UPDATE acc', 'ounts SET balance = 0')",
		"CREATE PROCEDURE p() BEGIN DECLARE t VARCHAR(9) DEFAULT 'acc'; EXECUTE IMMEDIATE CONCAT('UPDATE ', t, 'ounts SET balance = 0'); END",
		"CREATE OR REPLACE PROCEDURE p() UPDATE other SET x = 1",
		"CREATE DEFINER=`root`@`localhost` PROCEDURE p() UPDATE other SET x = 1",
		"CREATE DEFINER = 'root'@'%' PROCEDURE p() UPDATE other SET x = 1",
		"CREATE DEFINER = CURRENT_USER() FUNCTION f() RETURNS INT RETURN 1",
		"CREATE OR REPLACE DEFINER=root@localhost FUNCTION f() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE other SET x = 1; RETURN 1; END",
		"CREATE AGGREGATE FUNCTION f(x INT) RETURNS INT BEGIN RETURN 1; END",
		"CREATE FUNCTION IF NOT EXISTS f() RETURNS INT RETURN 1",
		"CREATE TRIGGER t AFTER INSERT ON other FOR EACH ROW EXECUTE IMMEDIATE CONCAT('DELETE FROM acc', 'ounts')",
		"CREATE OR REPLACE TRIGGER t BEFORE UPDATE ON other FOR EACH ROW SET NEW.x = 1",
		"CREATE EVENT e ON SCHEDULE EVERY 1 SECOND DO EXECUTE IMMEDIATE CONCAT('UPDATE acc', 'ounts SET balance = 0')",
		"CREATE EVENT IF NOT EXISTS e ON SCHEDULE AT CURRENT_TIMESTAMP DO UPDATE other SET x = 1",
		"ALTER EVENT e DO UPDATE other SET x = 1",
		"ALTER DEFINER = CURRENT_USER EVENT e ENABLE",
		"ALTER PROCEDURE p COMMENT 'x'",
		"CREATE OR REPLACE PACKAGE BODY pk AS PROCEDURE p AS BEGIN NULL; END; END",
		"/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER t AFTER INSERT ON other FOR EACH ROW SET @x = 1 */",
		"/*!CREATE PROCEDURE p() UPDATE other SET x = 1 */",
		"SELECT 1; CREATE PROCEDURE p() UPDATE other SET x = 1",
	},
	"sqlite": {
		"CREATE TRIGGER t AFTER INSERT ON other BEGIN UPDATE other SET x = 1; END",
		"CREATE TEMP TRIGGER t AFTER INSERT ON other BEGIN UPDATE other SET x = 1; END",
		"CREATE TEMPORARY TRIGGER IF NOT EXISTS t AFTER INSERT ON other BEGIN DELETE FROM other; END",
		"create trigger main.t instead of update on v begin select 1; end",
	},
}

// routineUnreadable are routine DDL texts the lexer cannot tokenize.
var routineUnreadable = map[string][]string{
	"mysql": {
		"CREATE PROCEDURE p() EXECUTE IMMEDIATE CONCAT('UPDATE acc', 'ounts SET balance = 0') -- \xc3\xa9",
		"CREATE PROCEDURE p() SELECT 1abc",
	},
	"postgres": {"CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1' \x00"},
	"sqlite":   {"CREATE TRIGGER t AFTER INSERT ON other BEGIN SELECT 1abc; END"},
}

// nonRoutineDDL is DDL whose words look like routine kinds but creates none.
var nonRoutineDDL = map[string][]string{
	"postgres": {
		"CREATE TABLE t (trigger_at int, event text)", "CREATE INDEX trigger_idx ON other (x)",
		"CREATE OR REPLACE VIEW v AS SELECT 1", "CREATE TEMP TABLE t (x int)", "ALTER TABLE other ADD COLUMN event int",
		"CREATE AGGREGATE a (int) (sfunc = int4pl, stype = int)", "GRANT TRIGGER ON other TO u",
		"ALTER TABLE other DISABLE RULE r", "COMMENT ON FUNCTION f() IS 'x'", "DROP FUNCTION f()",
	},
	"mysql": {
		"CREATE TABLE t (x INT, event INT)", "CREATE DEFINER=`u`@`h` SQL SECURITY INVOKER VIEW v AS SELECT 1",
		"GRANT CREATE ROUTINE, TRIGGER ON db.other TO u", "GRANT ALTER ROUTINE ON PROCEDURE db.p TO u", "DROP PROCEDURE p",
		"CREATE UNIQUE INDEX procedure_idx ON other (x)", "SELECT 1 /*! , 2 */",
	},
	"sqlite": {"CREATE TABLE t (x, \"trigger\")", "DROP TRIGGER t", "CREATE VIEW v AS SELECT 1"},
}

// TestRoutineDDLRefused: every routine kind × body form is refused on a pool with
// guarded tables, passes with WithDDL(true) and without guarded tables; the look-alikes
// pass.
func TestRoutineDDLRefused(t *testing.T) {
	for _, d := range []testDialect{pgTest, mysqlTest, sqliteTest} {
		guarded := newTestRewriter(t, d, Guard("accounts"))
		ddl := newTestRewriter(t, d, Guard("accounts"), WithDDL(true))
		plain := newTestRewriter(t, d, WithDDL(false))
		ft := newFzTarget(t, d)
		for _, sql := range append(routineShapes[d.name], routineUnreadable[d.name]...) {
			_, err := guarded.Rewrite(sql, false)
			if !refused(err) {
				t.Errorf("%s: rewrite(%q) = %v; want ErrUnsupported", d.name, sql, err)
			} else if !strings.Contains(err.Error(), "WithDDL") {
				t.Errorf("%s: rewrite(%q) refused for another reason: %v", d.name, sql, err)
			}
			if _, err := plain.Rewrite(sql, false); err != nil {
				t.Errorf("%s: no guarded table: rewrite(%q) = %v; want pass-through", d.name, sql, err)
			}
			ft.check(t, sql)
		}
		for _, sql := range routineShapes[d.name] {
			if strings.Contains(sql, "EXECUTE IMMEDIATE") || strings.HasPrefix(sql, "SELECT 1;") || strings.Contains(strings.ToUpper(sql), "; END") {
				// refused for their other content: dynamic SQL in a statement of its own, and
				// a compound body's statements are judged one by one (END: transaction control)
				continue
			}
			if _, err := ddl.Rewrite(sql, false); err != nil {
				t.Errorf("%s: WithDDL(true): rewrite(%q) = %v; want pass-through", d.name, sql, err)
			}
		}
		for _, sql := range nonRoutineDDL[d.name] {
			if p, err := guarded.Rewrite(sql, false); err != nil || p.Kind != plan.KindPass {
				t.Errorf("%s: rewrite(%q) = %v, %v; want pass-through (no routine)", d.name, sql, p, err)
			}
			ft.check(t, sql)
		}
	}
}
