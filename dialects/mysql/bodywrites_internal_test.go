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
