package mysql

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestBodyWritesDynamicSQLAndDDL: bodyWrites, the one judgement of a stored body
// (red-team rt47b F1, F2). Dynamic SQL whose text is one literal is judged as a
// statement; dynamic SQL it cannot read writes anything; DDL counts against a guard
// table (guard true) and not against the guarded table.
func TestBodyWritesDynamicSQLAndDDL(t *testing.T) {
	const tomb, floor, table = "fencedsql_tomb_acc", "fencedsql_floor", "acc"
	for _, c := range []struct {
		body, name  string
		guard, want bool
	}{
		// Dynamic SQL of one literal: its text is judged.
		{"BEGIN PREPARE s FROM 'DELETE FROM fencedsql_tomb_acc'; EXECUTE s; DEALLOCATE PREPARE s; END", tomb, true, true},
		{"BEGIN PREPARE s FROM \"UPDATE fencedsql_floor SET floor = 0\"; EXECUTE s; END", floor, true, true},
		{"BEGIN PREPARE s FROM 'UPDATE acc SET balance = 0'; EXECUTE s USING @a; END", table, false, true},
		{"BEGIN EXECUTE IMMEDIATE 'RENAME TABLE fencedsql_tomb_acc TO old'; END", tomb, true, true},
		{"BEGIN PREPARE `s` FROM 'DROP TABLE `fencedsql_floor`'; EXECUTE `s`; END", floor, true, true},
		{"BEGIN PREPARE s FROM 'SELECT ''x'' FROM fencedsql_tomb_acc'; EXECUTE s; END", tomb, true, false},
		{"BEGIN PREPARE s FROM 'DELETE FROM other'; EXECUTE s; DROP PREPARE s; END", tomb, true, false},
		{"BEGIN EXECUTE IMMEDIATE 'SELECT 1' USING @a; END", table, false, false},
		// Dynamic SQL this cannot read: a door to any table.
		{"BEGIN SET @q = 'DELETE FROM fencedsql_tomb_acc'; PREPARE s FROM @q; EXECUTE s; END", tomb, true, true},
		{"BEGIN EXECUTE IMMEDIATE @q; END", floor, true, true},
		{"BEGIN EXECUTE IMMEDIATE @q; END", table, false, true},
		{"BEGIN PREPARE s FROM CONCAT('DELETE FROM fencedsql_', 'tomb_acc'); EXECUTE s; END", tomb, true, true},
		{"BEGIN PREPARE s FROM ('SELECT 1'); EXECUTE s; END", tomb, true, true},
		{"BEGIN PREPARE s FROM 'DELETE FROM fencedsql_' 'tomb_acc'; EXECUTE s; END", tomb, true, true},
		{"BEGIN PREPARE s FROM _utf8mb4'SELECT 1'; EXECUTE s; END", tomb, true, true},
		{"BEGIN EXECUTE IMMEDIATE 0x53454C4543542031; END", tomb, true, true},
		{"BEGIN PREPARE s FROM 'DELETE FROM fencedsql_to\\mb_acc'; EXECUTE s; END", tomb, true, true},
		{"BEGIN EXECUTE s; END", tomb, true, true}, // the caller's prepared statement
		{"BEGIN DECLARE q TEXT DEFAULT 'x'; PREPARE s FROM q; EXECUTE s; END", table, false, true},
		{"BEGIN PREPARE s FROM 'SELECT 1' ; EXECUTE t; END", tomb, true, true},
		{"BEGIN SET @x = 'unterminated; EXECUTE IMMEDIATE @x; END", tomb, true, true}, // the lexer cannot read it
		// No dynamic SQL.
		{"BEGIN GRANT SELECT, EXECUTE ON PROCEDURE p TO u; REVOKE EXECUTE ON PROCEDURE p FROM u; END", tomb, true, false},
		{"BEGIN XA PREPARE 'x'; END", tomb, true, false},
		{"BEGIN DELETE FROM other; END", tomb, true, false},
		// DDL: a guard table's, not the guarded table's.
		{"BEGIN RENAME TABLE fencedsql_tomb_acc TO old; CREATE TABLE fencedsql_tomb_acc LIKE old; DROP TABLE old; END", tomb, true, true},
		{"ALTER TABLE fencedsql_tomb_acc ENGINE=MEMORY", tomb, true, true},
		{"DROP TABLE fencedsql_floor", floor, true, true},
		{"OPTIMIZE TABLE fencedsql_floor", floor, true, true},
		{"ALTER TABLE acc ADD COLUMN x INT", table, false, false},
		{"ALTER TABLE other ENGINE=MEMORY", tomb, true, false},
	} {
		if got := bodyWrites(c.body, dialect.MySQLSyntax, c.name, c.guard); got != c.want {
			t.Errorf("bodyWrites(%q, %q, guard %v) = %v, want %v", c.body, c.name, c.guard, got, c.want)
		}
	}
}

// TestDynamicTextsExecuteNeedsStraightLinePrepare: EXECUTE name reads as the text of
// the body's PREPAREs of name only when one of them comes before it and no control
// word (a branch, a loop, a handler, a jump, a package routine) comes before the
// EXECUTE (red-team rt48b F2): otherwise a path reaches the EXECUTE without the
// body's PREPARE, and it runs the statement the caller prepared (prepared statements
// are the session's) with the routine's rights — dynamic SQL that may write anything.
func TestDynamicTextsExecuteNeedsStraightLinePrepare(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{"BEGIN PREPARE s FROM 'SELECT 1'; EXECUTE s; DEALLOCATE PREPARE s; END", true},
		{"BEGIN BEGIN PREPARE s FROM 'SELECT 1'; END; EXECUTE s USING @a; END", true},
		{"BEGIN DECLARE x INT; PREPARE s FROM 'SELECT 1'; SET x = 1; EXECUTE s; END", true},
		// The red-team's three.
		{"BEGIN EXECUTE s; PREPARE s FROM 'SELECT 1'; END", false},
		{"BEGIN IF 1 = 0 THEN PREPARE s FROM 'SELECT 1'; END IF; EXECUTE s; END", false},
		{"lbl: BEGIN EXECUTE s; LEAVE lbl; PREPARE s FROM 'SELECT 1'; END", false},
		// The class: a jump, a loop, a handler, an Oracle-mode exception section, a
		// routine of a package body, another name.
		{"BEGIN l: BEGIN LEAVE l; PREPARE s FROM 'SELECT 1'; END; EXECUTE s; END", false},
		{"BEGIN l: LOOP EXECUTE s; PREPARE s FROM 'SELECT 1'; END LOOP; END", false},
		{"BEGIN WHILE @i > 0 DO PREPARE s FROM 'SELECT 1'; SET @i = @i - 1; END WHILE; EXECUTE s; END", false},
		{"BEGIN REPEAT PREPARE s FROM 'SELECT 1'; UNTIL 1 END REPEAT; EXECUTE s; END", false},
		{"BEGIN CASE WHEN @x THEN PREPARE s FROM 'SELECT 1'; END CASE; EXECUTE s; END", false},
		{"BEGIN DECLARE EXIT HANDLER FOR SQLEXCEPTION EXECUTE s; PREPARE s FROM 'SELECT 1'; SELECT bad(); END", false},
		{"BEGIN BEGIN DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN END; SELECT bad(); PREPARE s FROM 'SELECT 1'; END; EXECUTE s; END", false},
		{"BEGIN SELECT bad(); PREPARE s FROM 'SELECT 1'; EXCEPTION WHEN OTHERS THEN EXECUTE s; END", false},
		{"PROCEDURE a AS BEGIN PREPARE s FROM 'SELECT 1'; END; PROCEDURE b AS BEGIN EXECUTE s; END;", false},
		{"BEGIN GOTO l; PREPARE s FROM 'SELECT 1'; <<l>> EXECUTE s; END", false},
		{"BEGIN PREPARE s FROM 'SELECT 1'; EXECUTE t; END", false},
		{"BEGIN PREPARE s FROM 'SELECT 1'; PREPARE s FROM @q; EXECUTE s; END", false},
	} {
		if _, ok := dynamicTexts(c.body, dialect.MySQLSyntax); ok != c.ok {
			t.Errorf("dynamicTexts(%q) ok = %v, want %v", c.body, ok, c.ok)
		}
	}
}

// TestDynamicTextsPrepareWhateverPrecedes: a PREPARE followed by a name and FROM is a
// PREPARE statement whatever word precedes it (red-team rt48b F3: a handler for a
// condition named xa or deallocate, DECLARE CONTINUE HANDLER FOR xa PREPARE s FROM
// @q, was taken for XA PREPARE / DEALLOCATE PREPARE and skipped): its text, a literal's
// or an unreadable one, is judged. DEALLOCATE PREPARE, DROP PREPARE and XA PREPARE
// still run no text; GRANT EXECUTE ON is no EXECUTE.
func TestDynamicTextsPrepareWhateverPrecedes(t *testing.T) {
	const tomb = "fencedsql_tomb_acc"
	for _, cond := range []string{"xa", "deallocate", "drop", "`xa`"} {
		for _, c := range []struct{ stmt string }{
			{"PREPARE s FROM @q"},
			{"PREPARE s FROM 'DELETE FROM fencedsql_tomb_acc'"},
			{"PREPARE s FROM CONCAT('DELETE FROM ', 'x')"},
		} {
			body := "BEGIN DECLARE " + cond + " CONDITION FOR SQLSTATE '45048'; DECLARE CONTINUE HANDLER FOR " + cond + " " + c.stmt + "; SIGNAL " + cond + "; END"
			if !bodyWrites(body, dialect.MySQLSyntax, tomb, true) {
				t.Errorf("bodyWrites(%q) = false, want true", body)
			}
		}
	}
	for _, body := range []string{
		"BEGIN PREPARE s FROM 'SELECT 1'; EXECUTE s; DEALLOCATE PREPARE s; DROP PREPARE s; END",
		"BEGIN XA PREPARE 'x'; XA COMMIT 'x'; END",
		"BEGIN GRANT EXECUTE ON PROCEDURE p TO u; GRANT EXECUTE, SELECT ON d.* TO u; REVOKE SELECT, EXECUTE ON d.* FROM u; END",
	} {
		if bodyWrites(body, dialect.MySQLSyntax, tomb, true) {
			t.Errorf("bodyWrites(%q) = true, want false", body)
		}
	}
}

// TestBodyWritesExecutableCommentsAndServerRoutines: the content of an executable
// comment is judged as code (a server that keeps /*! … */ in the stored definition
// runs it: red-team rt48b's latent finding), and a CALL of a routine of the server's
// own databases mysql and sys — not judged themselves, sys.execute_prepared_stmt runs
// its argument — is unreadable dynamic SQL.
func TestBodyWritesExecutableCommentsAndServerRoutines(t *testing.T) {
	const tomb, floor = "fencedsql_tomb_acc", "fencedsql_floor"
	for _, c := range []struct {
		body, name string
		want       bool
	}{
		{"BEGIN /*!DELETE*/ FROM fencedsql_tomb_acc; END", tomb, true},
		{"BEGIN /*!50000 DELETE FROM fencedsql_tomb_acc */; END", tomb, true},
		{"BEGIN /*M!100000 UPDATE fencedsql_floor SET floor = 0 */; END", floor, true},
		{"BEGIN /*!PREPARE s FROM @q*/; EXECUTE s; END", tomb, true},
		{"BEGIN /*!EXECUTE IMMEDIATE @q */; END", tomb, true},
		{"BEGIN /*!50000 SELECT 1 */; END", tomb, false},
		{"BEGIN SELECT /*+ NO_INDEX_MERGE(t) */ 1 FROM fencedsql_tomb_acc; END", tomb, false},
		{"BEGIN CALL sys.execute_prepared_stmt(@q); END", tomb, true},
		{"BEGIN CALL `mysql`.DropGeometryColumn('', 'd', 't', 'c'); END", floor, true},
		{"BEGIN CALL other.p(); END", tomb, false},
	} {
		if got := bodyWrites(c.body, dialect.MySQLSyntax, c.name, true); got != c.want {
			t.Errorf("bodyWrites(%q, %q) = %v, want %v", c.body, c.name, got, c.want)
		}
	}
}

// TestDynamicUnreadNested: unreadable dynamic SQL inside a literal text the body runs
// is unreadable dynamic SQL of the body (dynamicUnread reads the texts it runs).
func TestDynamicUnreadNested(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{"BEGIN EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE @q'; END", true},
		{"BEGIN PREPARE s FROM 'PREPARE t FROM @q'; EXECUTE s; END", true},
		{"BEGIN EXECUTE IMMEDIATE 'CALL sys.execute_prepared_stmt(@q)'; END", true},
		{"BEGIN EXECUTE IMMEDIATE '/*!EXECUTE IMMEDIATE @q*/'; END", true},
		{"BEGIN EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE ''SELECT 1'''; END", false},
		{"BEGIN DELETE FROM fencedsql_tomb_acc; END", false},
	} {
		if got := dynamicUnread(c.body); got != c.want {
			t.Errorf("dynamicUnread(%q) = %v, want %v", c.body, got, c.want)
		}
	}
}
