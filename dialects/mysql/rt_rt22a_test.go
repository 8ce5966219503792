package mysql_test

// Red-team rt22a: the planner's literal checks (plan/protect_literal.go,
// protect_strings.go) on MariaDB 10.11.

import (
	"strings"
	"testing"
)

// rt22aWide spells s as a MySQL string literal whose bytes are s in UTF-16 (big-endian,
// le: little-endian) or UTF-32 (width 4), each NUL byte written as the escape \0.
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

// TestRTrt22aFloorLoweredThroughIntroducedString (fail-open under WithDynamicSQL).
// rt21b F1 was fixed for hexadecimal literals only: literalText decodes an introducer's
// wide character set (_utf16, _utf16le, _ucs2, _utf32) in its X'…'/0x… branches. The
// same introducer on a quoted string — _utf16'\0U\0P\0D…', NULs written \0 — is the
// UTF-16 text "UPDATE …" to MariaDB, and the bytes "\x00U\x00P…" (no reserved prefix)
// to the planner. EXECUTE IMMEDIATE / PREPARE of it lowers fencedsql_floor to 0 through
// the fenced pool, and a write under token 40 with the floor at 50 is accepted.
//
// Right behaviour: refused with ErrUnsupported, as the same body in a plain string or
// in _utf16 X'…' is (decode every introduced literal in its character set, or refuse a
// code literal whose introducer is not ASCII-compatible).
func TestRTrt22aFloorLoweredThroughIntroducedString(t *testing.T) {
	const lower = "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
	requireFloorLiteralsRefused(t, []string{"EXECUTE IMMEDIATE '" + lower + "'"}, []floorLiteralCase{
		{"utf16-string", "EXECUTE IMMEDIATE _utf16" + rt22aWide(lower, 2, false), ""},
		{"utf16le-string", "EXECUTE IMMEDIATE _utf16le" + rt22aWide(lower, 2, true), ""},
		{"utf32-prepare", "PREPARE rt22a FROM _utf32" + rt22aWide(lower, 4, false), "EXECUTE rt22a"},
	})
}
