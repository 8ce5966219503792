package plan

// Red-team rt22a: the planner's literal checks (protect_literal.go, protect_strings.go,
// protect_reach.go, dynamic.go, protect_settings.go) as of 500df86.

import (
	"strings"
	"testing"
)

// rt22aWide spells s as a MySQL string literal whose bytes are s in UTF-16 (big-endian,
// le: little-endian) or UTF-32, each NUL byte written as the escape \0.
func rt22aWide(s string, width int, le bool) string {
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

// TestRTrt22aIntroducedStringLiteral (fail-open under WithDynamicSQL, MySQL/MariaDB).
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
func TestRTrt22aIntroducedStringLiteral(t *testing.T) {
	const floorWrite = "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
	for _, in := range []string{
		"EXECUTE IMMEDIATE _utf16" + rt22aWide(floorWrite, 2, false),
		"EXECUTE IMMEDIATE _UTF16 " + rt22aWide(floorWrite, 2, false),
		"EXECUTE IMMEDIATE _utf16le" + rt22aWide(floorWrite, 2, true),
		"PREPARE s FROM _ucs2" + rt22aWide(floorWrite, 2, false),
		"PREPARE s FROM _utf32" + rt22aWide(floorWrite, 4, false),
		"EXECUTE IMMEDIATE _utf16" + rt22aWide("DROP TRIGGER fencedsql_guard_accounts", 2, false),
	} {
		rw := newTestRewriter(t, mysqlTest, protectOptions["ddl+dynamic_sql"]...)
		if p, err := rw.Rewrite(in, false); !isRefusal(err) {
			t.Errorf("rewrite(%.70q…) = %v, %v; want ErrUnsupported (the string is %q in a wide character set)", in, p, err, floorWrite)
		}
	}
}

// TestRTrt22aEscapedQuotePairHidesBody (fail-open under WithDDL/WithDynamicSQL,
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
func TestRTrt22aEscapedQuotePairHidesBody(t *testing.T) {
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

// TestRTrt22aNestedDoInBody (fail-open under WithDDL/WithDynamicSQL, PostgreSQL).
// protectReachBodies skips a block's leading keywords before a statement's head:
// "BEGIN", "THEN", "ELSE", "LOOP" and "DO". DO is also a statement (plpgsql runs it as
// SQL), so in a body "BEGIN DO $b$ … $b$; END" the head skips past DO to the $b$
// string, the head is "", and the nested body — not a code head — is never lexed:
// catalog writes and CREATE EXTENSION in a DO nested in a DO or in a function body pass
// (the same statements one level up are refused).
//
// Right behaviour: refused (ErrUnsupported): treat DO followed by a string (or
// LANGUAGE) as the head of a statement whose body is judged.
func TestRTrt22aNestedDoInBody(t *testing.T) {
	for _, in := range []string{
		"DO $a$ BEGIN DO $b$ BEGIN UPDATE pg_trigger SET tgenabled = 'D' WHERE tgname LIKE 'fenced%'; END $b$; END $a$",
		"DO $a$ BEGIN IF true THEN DO $b$ BEGIN UPDATE pg_trigger SET tgenabled = 'D'; END $b$; END IF; END $a$",
		"DO $a$ BEGIN DO $b$ BEGIN CREATE EXTENSION pg_surgery; END $b$; END $a$",
		"CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN DO $d$ BEGIN UPDATE pg_trigger SET tgenabled = 'D'; END $d$; END $f$",
	} {
		// Control: one level up it is refused.
		rw := newTestRewriter(t, pgTest, protectOptions["ddl+dynamic_sql"]...)
		if p, err := rw.Rewrite(in, false); !isRefusal(err) {
			t.Errorf("rewrite(%q) = %v, %v; want ErrUnsupported (the nested DO's body writes a catalog / creates an extension)", in, p, err)
		}
	}
}

// TestRTrt22aSurgeryInBody (fail-open under WithDDL/WithDynamicSQL, PostgreSQL). The
// pg_surgery refusal (protectSettings: heap_force_kill/heap_force_freeze called) runs
// on the statement's own tokens only; protectReachBodies judges a body with
// protectReach, which has no surgery check. A DO block or a function body that calls
// heap_force_kill on a guarded table found by a pattern (no guarded name in the text)
// passes, and kills the guarded row's version without any trigger: no tombstone, no
// fence.
//
// Right behaviour: refused (ErrUnsupported) "whatever the statement looks like", as
// protect_settings.go says: apply the surgery check to bodies too.
func TestRTrt22aSurgeryInBody(t *testing.T) {
	for _, in := range []string{
		"DO $a$ BEGIN PERFORM heap_force_kill(c.oid, ARRAY['(0,1)']::tid[]) FROM pg_class c WHERE c.relname LIKE 'acc%' AND c.relkind = 'r'; END $a$",
		"CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN PERFORM heap_force_freeze(c.oid, ARRAY['(0,1)']::tid[]) FROM pg_class c WHERE c.relname LIKE 'acc%'; END $f$",
		"CREATE FUNCTION f() RETURNS void LANGUAGE sql AS 'SELECT heap_force_kill(''accounts''::regclass, ARRAY[''(0,1)'']::tid[])'",
	} {
		rw := newTestRewriter(t, pgTest, protectOptions["ddl+dynamic_sql"]...)
		if p, err := rw.Rewrite(in, false); !isRefusal(err) {
			t.Errorf("rewrite(%q) = %v, %v; want ErrUnsupported (pg_surgery call in a body)", in, p, err)
		}
	}
}

// TestRTrt22aUescapeWordInData (over-refusal, PostgreSQL, default options).
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
func TestRTrt22aUescapeWordInData(t *testing.T) {
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
