package plan

import (
	"encoding/hex"
	"strings"
	"testing"
)

// A body or name in a literal is judged as the server reads it, whatever its spelling
// (protect_literal.go; red-team rt20t F2, F3): each statement below writes the token
// floor or disables a guard's trigger, spelled in a literal form the server decodes,
// and is refused under every option set; the same text that decodes to a harmless
// body passes where the options allow its kind of statement.
func TestLiteralSpellingsDecoded(t *testing.T) {
	hexOf := func(s string) string { return hex.EncodeToString([]byte(s)) }
	bits := func(s string) string {
		var b strings.Builder
		for _, c := range []byte(s) {
			for k := 7; k >= 0; k-- {
				b.WriteByte('0' + (c>>k)&1)
			}
		}
		return b.String()
	}
	floorWrite := "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
	refused := []reachCase{
		// PostgreSQL U&'…' with an escape character of its own.
		{pgTest, "DO U&'BEGIN UPDATE fenced!0073ql_floor SET floor = 0; END' UESCAPE '!'"},
		{pgTest, "DO U&'BEGIN UPDATE fenced#+000073ql_floor SET floor = 0; END' UESCAPE '#'"},
		{pgTest, "CREATE FUNCTION f() RETURNS void LANGUAGE sql AS U&'UPDATE fenced*0073ql_floor SET floor = 0' UESCAPE '*'"},
		{pgTest, "DO U&'BEGIN ALTER TABLE !0061ccounts DIS!0041BLE TRIGGER ALL; END' UESCAPE '!'"},
		{pgTest, "CREATE FOREIGN TABLE ft (id int, floor bigint) SERVER s OPTIONS (table_name U&'fenced!0073ql_floor' UESCAPE '!')"},
		// A dollar-quoted name right after the tag.
		{pgTest, "CREATE FOREIGN TABLE ft (id int, floor bigint) SERVER s OPTIONS (table_name $$fencedsql_floor$$)"},
		{pgTest, "CREATE FOREIGN TABLE ft (id int, floor bigint) SERVER s OPTIONS (table_name $t$fencedsql_floor$t$)"},
		// MySQL/MariaDB hexadecimal and bit literals, with and without an introducer.
		{mysqlTest, "PREPARE s FROM X'" + hexOf(floorWrite) + "'"},
		{mysqlTest, "PREPARE s FROM x'" + hexOf(floorWrite) + "'"},
		{mysqlTest, "EXECUTE IMMEDIATE 0x" + hexOf(floorWrite)},
		{mysqlTest, "EXECUTE IMMEDIATE _latin1 X'" + hexOf(floorWrite) + "'"},
		{mysqlTest, "PREPARE s FROM 0b" + bits(floorWrite)},
		{mysqlTest, "PREPARE s FROM B'" + bits(floorWrite) + "'"},
		{mysqlTest, "EXECUTE IMMEDIATE 0x" + hexOf("DROP TRIGGER fencedsql_guard_accounts")},
		{mysqlTest, "PREPARE s FROM CONCAT(X'" + hexOf("UPDATE fencedsql_") + "', 'floor SET floor = 0')"},
	}
	for _, c := range refused {
		for optName, opts := range protectOptions {
			rw := newTestRewriter(t, c.d, opts...)
			if p, err := rw.Rewrite(c.in, false); !isRefusal(err) {
				t.Errorf("%s %s: rewrite(%q) = %v, %v; want ErrUnsupported", c.d.name, optName, c.in, p, err)
			}
		}
	}
	passed := []reachCase{
		{pgTest, "DO U&'BEGIN PERFORM !0031; END' UESCAPE '!'"},
		{mysqlTest, "PREPARE s FROM X'" + hexOf("SELECT 1") + "'"},
		{mysqlTest, "EXECUTE IMMEDIATE 0x" + hexOf("SELECT 1")},
	}
	for _, c := range passed {
		rw := newTestRewriter(t, c.d, Guard("accounts"), WithDDL(true), WithDynamicSQL(true))
		if _, err := rw.Rewrite(c.in, false); err != nil {
			t.Errorf("%s: rewrite(%q) = %v; want a pass (the decoded body is harmless)", c.d.name, c.in, err)
		}
	}
}
