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
		// By a quoted name (red-team rt65a: these ran through a pool).
		`SELECT "heap_force_kill"('accounts'::regclass, ARRAY['(0,1)']::tid[])`,
		`SELECT public."heap_force_freeze"('accounts'::regclass, ARRAY['(0,1)']::tid[])`,
		`SELECT "public"."heap_force_kill"('accounts'::regclass, ARRAY['(0,1)']::tid[])`,
		`SELECT U&"heap_force_kil\006c"('accounts'::regclass, ARRAY['(0,1)']::tid[])`,
		`SELECT U&"heap!0066orce_kill" UESCAPE '!' ('accounts'::regclass, ARRAY['(0,1)']::tid[])`,
		`WITH x AS (SELECT "heap_force_kill"('accounts'::regclass, ARRAY['(0,1)']::tid[])) SELECT * FROM x`,
	} {
		for optName, opts := range protectOptions {
			rw := newTestRewriter(t, pgTest, opts...)
			if p, err := rw.Rewrite(in, false); !isRefusal(err) {
				t.Errorf("%s: rewrite(%q) = %v, %v; want ErrUnsupported", optName, in, p, err)
			}
		}
	}
}

// Red-team rt22a: the planner's literal checks (protect_literal.go, protect_strings.go,
// protect_reach.go, dynamic.go, protect_settings.go) as of 500df86.

// wideText spells s as a MySQL string literal whose bytes are s in UTF-16 (big-endian,
// le: little-endian) or UTF-32, each NUL byte written as the escape \0.
func wideText(s string, width int, le bool) string {
	var b strings.Builder
	for _, c := range s {
		if le {
			b.WriteRune(c)
			b.WriteString(strings.Repeat(`\0`, width-1))
			continue
		}
		b.WriteString(strings.Repeat(`\0`, width-1))
		b.WriteRune(c)
	}
	return "'" + b.String() + "'"
}

// TestIntroducedStringLiteralBodyRefused (fail-open under WithDynamicSQL, MySQL/MariaDB).
// literalText decodes an introducer's wide character set (_utf16, _utf16le, _ucs2,
// _utf32) only for a hexadecimal or bit literal (introduced() is called from the X'…'
// and 0x… branches). An introducer applies just as well to a quoted string:
// _utf16'\0U\0P\0D…' is the bytes 00 55 00 50 00 44 … read as UTF-16, i.e. the text
// "UPDATE …", which MariaDB converts to the connection's character set before it parses
// the dynamic statement. The planner reads the string as "\x00U\x00P…", finds no
// reserved prefix in it, and lets EXECUTE IMMEDIATE / PREPARE of a write of
// fencedsql_floor through. (SET @q = _utf16'…' passes even on a default pool, and a
// later PREPARE s FROM @q runs it.)
//
// Right behaviour: refused (ErrUnsupported) like the same body in a plain literal or in
// _utf16 X'…': decode any literal (string, hex, bit) in the character set its
// introducer names, or refuse a code literal whose introducer is not ASCII-compatible.
func TestIntroducedStringLiteralBodyRefused(t *testing.T) {
	const floorWrite = "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
	for _, in := range []string{
		"EXECUTE IMMEDIATE _utf16" + wideText(floorWrite, 2, false),
		"EXECUTE IMMEDIATE _UTF16 " + wideText(floorWrite, 2, false),
		"EXECUTE IMMEDIATE _utf16le" + wideText(floorWrite, 2, true),
		"PREPARE s FROM _ucs2" + wideText(floorWrite, 2, false),
		"PREPARE s FROM _utf32" + wideText(floorWrite, 4, false),
		"EXECUTE IMMEDIATE _utf16" + wideText("DROP TRIGGER fencedsql_guard_accounts", 2, false),
	} {
		rw := newTestRewriter(t, mysqlTest, protectOptions["ddl+dynamic_sql"]...)
		if p, err := rw.Rewrite(in, false); !isRefusal(err) {
			t.Errorf("rewrite(%.70q…) = %v, %v; want ErrUnsupported (the string is %q in a wide character set)", in, p, err, floorWrite)
		}
	}
}

// TestEscapedQuotePairBodyRefused (fail-open under WithDDL/WithDynamicSQL,
// PostgreSQL E'…' bodies and MySQL/MariaDB strings). stringBody decodes backslash
// escapes first (decodeLoose: \' → ') and then undoubles ” → ': a body written
// E'… \'\' …' (or '… \'\' …' on MySQL), which the server reads as "… ” …" (an empty
// string literal), is read by the planner as "… ' …" — an opening quote. Everything up
// to the next such pair is then a string to the body checks, so a catalog write, a
// CREATE EXTENSION or any other statement protect_reach.go refuses by class goes
// through: DO E'BEGIN PERFORM \'\'; UPDATE pg_trigger SET tgenabled = $x$D$x$ …;
// PERFORM \'\'; END' turns the guards' triggers off.
//
// Right behaviour: refused (ErrUnsupported) as the same body in $$…$$ is. Undouble
// quotes and decode escapes in one left-to-right pass (an escaped quote is not half of
// a doubled one), and on PostgreSQL decode backslashes only for E'…' literals.
func TestEscapedQuotePairBodyRefused(t *testing.T) {
	for _, c := range []reachCase{
		{pgTest, `DO E'BEGIN PERFORM \'\'; UPDATE pg_trigger SET tgenabled = $x$D$x$ WHERE tgname LIKE $y$fenced%$y$; PERFORM \'\'; END'`},
		{pgTest, `DO E'BEGIN PERFORM \'\'; CREATE EXTENSION pg_surgery; PERFORM \'\'; END'`},
		{pgTest, `CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS E'BEGIN PERFORM \'\'; UPDATE pg_proc SET prosrc = $x$x$x$ WHERE false; PERFORM \'\'; END'`},
		{pgTest, `DO $$ BEGIN EXECUTE E'SELECT \'\'; UPDATE pg_trigger SET tgenabled = 1'; END $$`},
		{mysqlTest, `EXECUTE IMMEDIATE 'UPDATE other o JOIN (SELECT \'\' z) d JOIN mysql.proc p SET p.comment = REPEAT(CHAR(120), 5) WHERE 1 OR o.s = \'\''`},
		{mysqlTest, `PREPARE s FROM 'UPDATE other o JOIN (SELECT \'\' z) d JOIN mysql.user u SET u.plugin = \'\' WHERE 0'`},
	} {
		// Control: the same body with plain quotes is refused.
		plain := strings.ReplaceAll(c.in, `\'\'`, `''''`)
		rw := newTestRewriter(t, c.d, protectOptions["ddl+dynamic_sql"]...)
		if _, err := rw.Rewrite(plain, false); !isRefusal(err) {
			t.Fatalf("%s control %q: %v, want ErrUnsupported", c.d.name, plain, err)
		}
		if p, err := rw.Rewrite(c.in, false); !isRefusal(err) {
			t.Errorf("%s: rewrite(%q) = %v, %v; want ErrUnsupported (the server reads \\'\\' as '', not as an opening quote)", c.d.name, c.in, p, err)
		}
	}
}

// TestUescapeWordInDataPasses (over-refusal, PostgreSQL, default options).
// nestedUnicodeEscape refuses any string literal in which the word "uescape" is
// followed (after blanks) by a quote character — and the closing quote of the literal
// itself counts: 'uescape', 'see UESCAPE', a dollar-quoted $$… uescape '!'$$ — in
// every statement, plain reads and writes of unguarded tables included. The bare word
// is refused too (a column named uescape). These are data, not Unicode-escape
// literals: the server reads no UESCAPE clause in them.
//
// Right behaviour: pass. Look for UESCAPE only in a string that is a body (a code
// head's literal) and there as a clause after a U&'…'/U&"…" token, not at the end of
// the literal's own text; the bare word only after a U& literal.
func TestUescapeWordInDataPasses(t *testing.T) {
	for _, in := range []string{
		"INSERT INTO other (s) VALUES ('uescape')",
		"SELECT * FROM words WHERE w = 'UESCAPE'",
		"UPDATE other SET note = 'see uescape' WHERE id = $1",
		"INSERT INTO docs (body) VALUES ('Write U&''d!0061t!+000061'' UESCAPE ''!'' to pick the escape')",
		"INSERT INTO other (s) VALUES ($$uescape '!'$$)",
		"SELECT uescape FROM glossary",
	} {
		rw := newTestRewriter(t, pgTest, Guard("accounts"))
		if _, err := rw.Rewrite(in, false); err != nil {
			t.Errorf("rewrite(%q) = %v; want a pass (data, not a UESCAPE clause)", in, err)
		}
	}
}
