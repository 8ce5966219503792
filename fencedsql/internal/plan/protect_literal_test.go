package plan

import (
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf16"
)

// A body or name in a literal is judged as the server reads it, whatever its spelling
// (protect_literal.go; red-team rt20t F2, F3): each statement below writes the token
// floor or disables a guard's trigger, spelled in a literal form the server decodes,
// and is refused under every option set; the same text that decodes to a harmless
// body passes where the options allow its kind of statement.
func utf16Hex(s string, little bool) string {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		if little {
			b = append(b, byte(u), byte(u>>8))
		} else {
			b = append(b, byte(u>>8), byte(u))
		}
	}
	return hex.EncodeToString(b)
}

func utf32Hex(s string) string {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r>>24), byte(r>>16), byte(r>>8), byte(r))
	}
	return hex.EncodeToString(b)
}

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
		// ... in a wide character set named by an introducer (red-team rt21b F1).
		{mysqlTest, "EXECUTE IMMEDIATE _utf16 X'" + utf16Hex(floorWrite, false) + "'"},
		{mysqlTest, "EXECUTE IMMEDIATE _utf16le 0x" + utf16Hex(floorWrite, true)},
		{mysqlTest, "PREPARE s FROM _ucs2 X'" + utf16Hex(floorWrite, false) + "'"},
		{mysqlTest, "PREPARE s FROM _utf32 X'" + utf32Hex(floorWrite) + "'"},
		// PostgreSQL: any escape character of a literal's own, a literal continued on
		// the next line, and Unicode escapes inside a body (red-team rt21b F2).
		{pgTest, "DO U&'BEGIN PERFORM !0031; END' UESCAPE '!'"},
		{pgTest, "DO U&'BEGIN UPDATE fenced!0073ql_'\n'floor SET floor = 0; END' UESCAPE '!'"},
		{pgTest, "DO U&'BEGIN UPDATE fenced!0073ql_floor SET floor = 0; END' UESCAPE ''\n'!'"},
		{pgTest, "DO $$ BEGIN EXECUTE U&'UPDATE fenced!0073ql_floor SET floor = 0' UESCAPE '!'; END $$"},
		{pgTest, "DO $$ BEGIN EXECUTE U&'UPDATE fenced\\0073ql_floor SET floor = 0'; END $$"},
		{pgTest, `DO $$ BEGIN UPDATE U&"fenced\0073ql_floor" SET floor = 0; END $$`},
		{pgTest, "DO $$ BEGIN EXECUTE 'UPDATE fenced'\n'sql_floor SET floor = 0'; END $$"},
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
		{pgTest, "INSERT INTO other (s) VALUES ('t_uescape_db', 'menu&', U&'caf\\00e9')"},
		{mysqlTest, "PREPARE s FROM X'" + hexOf("SELECT 1") + "'"},
		{mysqlTest, "EXECUTE IMMEDIATE _utf16 X'" + utf16Hex("SELECT 1", false) + "'"},
		{mysqlTest, "EXECUTE IMMEDIATE 0x" + hexOf("SELECT 1")},
	}
	for _, c := range passed {
		rw := newTestRewriter(t, c.d, Guard("accounts"), WithDDL(true), WithDynamicSQL(true))
		if _, err := rw.Rewrite(c.in, false); err != nil {
			t.Errorf("%s: rewrite(%q) = %v; want a pass (the decoded body is harmless)", c.d.name, c.in, err)
		}
	}
}

// pg_surgery's functions change row versions without triggers, from a SELECT: refused
// on a pool with guarded tables whatever they name (red-team rt20t F5).
func TestSurgeryRefused(t *testing.T) {
	for _, in := range []string{
		"SELECT heap_force_kill('fencedsql_floor'::regclass, ARRAY['(0,1)']::tid[])",
		"SELECT public.HEAP_FORCE_FREEZE('accounts'::regclass, ARRAY['(0,1)']::tid[])",
		"SELECT * FROM other WHERE heap_force_kill(x, y) IS NULL",
	} {
		for optName, opts := range protectOptions {
			rw := newTestRewriter(t, pgTest, opts...)
			if p, err := rw.Rewrite(in, false); !isRefusal(err) {
				t.Errorf("%s: rewrite(%q) = %v, %v; want ErrUnsupported", optName, in, p, err)
			}
		}
	}
}
