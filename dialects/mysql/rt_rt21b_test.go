package mysql_test

// Red-team rt21b: the last commit's literal decoding (plan/protect_literal.go) and the
// token floor's locking read (G16 "A raise returns when no older write can still
// commit").

import (
	"encoding/hex"
	"testing"
	"unicode/utf16"
)

// rt21bUTF16 returns s encoded as UTF-16 (big endian: MySQL's utf16/ucs2), in hex.
func rt21bUTF16(s string, littleEndian bool) string {
	var b []byte
	for _, r := range utf16.Encode([]rune(s)) {
		if littleEndian {
			b = append(b, byte(r), byte(r>>8))
		} else {
			b = append(b, byte(r>>8), byte(r))
		}
	}
	return hex.EncodeToString(b)
}

// TestRTrt21bFloorLoweredThroughWideCharsetHex (fail-open under WithDynamicSQL; naive
// layout). The last commit decodes MySQL/MariaDB hexadecimal and bit literals "as the
// bytes it spells" before the body checks of PREPARE / EXECUTE IMMEDIATE (design.md §5:
// "a literal is read as the server reads it"), and takes a character-set introducer as
// "a token of its own". But the server does not read the bytes as the connection's
// character set when the introducer names another one: `_utf16 X'0055005000…'` is the
// text "UPDATE …" in UTF-16, which MariaDB converts to the connection's character set
// before it parses the dynamic statement. The wrapper decodes it as the bytes
// "\x00U\x00P…", in which no name is found, and lets `EXECUTE IMMEDIATE _utf16
// X'<UPDATE fencedsql_floor SET floor = 0 …>'` (also _utf16 0x…, _utf16le, _ucs2,
// _utf32, and PREPARE … FROM _utf16 X'…') through the fenced pool: the floor goes to 0
// and a write under token 40 with the floor at 50 is accepted.
//
// Right behaviour: decode a hexadecimal/bit literal, and a string literal, in the
// character set its introducer names (utf16, utf16le, ucs2, utf32, …) before the body
// checks — or refuse a dynamic body whose introducer is not an ASCII-compatible
// character set.
func TestRTrt21bFloorLoweredThroughWideCharsetHex(t *testing.T) {
	const lower = "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
	u32 := func(s string) string {
		var b []byte
		for _, r := range s {
			b = append(b, 0, 0, byte(r>>8), byte(r))
		}
		return hex.EncodeToString(b)
	}
	requireFloorLiteralsRefused(t, []string{"EXECUTE IMMEDIATE '" + lower + "'", "EXECUTE IMMEDIATE 0x" + hex.EncodeToString([]byte(lower))}, []floorLiteralCase{
		{"utf16-x", "EXECUTE IMMEDIATE _utf16 X'" + rt21bUTF16(lower, false) + "'", ""},
		{"utf16le-0x", "EXECUTE IMMEDIATE _utf16le 0x" + rt21bUTF16(lower, true), ""},
		{"utf32-prepare", "PREPARE rt21b FROM _utf32 X'" + u32(lower) + "'", "EXECUTE rt21b"},
	})
}
