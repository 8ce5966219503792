package mysql_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// floorLiteralCase is a statement that spells a write of the token floor in a literal
// form the planner must read as the server does, and the statement that runs what it
// prepared ("" for none).
type floorLiteralCase struct{ name, q, then string }

// requireFloorLiteralsRefused runs each case on a fenced connection with
// fenced_allow=dynamic_sql over a guarded table whose floor is 50, after the controls
// (spellings the checks read plainly, which must be refused): each case must be
// refused with ErrUnsupported; if one is not, it reports whether the floor was lowered
// and a write under token 40 then accepted.
func requireFloorLiteralsRefused(t *testing.T, controls []string, cases []floorLiteralCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			dsn, raw := floorAccounts(t, 1)
			if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
				t.Fatal(err)
			}
			fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=dynamic_sql")
			conn, err := fenced.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range controls {
				if _, err := conn.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("control %q: %v, want ErrUnsupported", q, err)
				}
			}
			if _, err := conn.ExecContext(ctx, c.q); err != nil {
				if !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("err = %v, want ErrUnsupported (the decoded literal names the floor)", err)
				}
				return
			}
			if c.then != "" {
				if _, err := conn.ExecContext(ctx, c.then); err != nil {
					t.Fatalf("%s: %v", c.then, err)
				}
			}
			var floor int64
			_ = raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor)
			_, werr := conn.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id = 1")
			t.Errorf("%.60s… went through the fenced pool (WithDynamicSQL): floor now %d (was 50); a write under token 40: err = %v", c.q, floor, werr)
		})
	}
}

// TestDynamicHexBodyLoweringFloorRefused (fail-open under WithDynamicSQL; naive layout).
// docs/design.md §5: the protect checks apply to the statements in the string literals
// of PREPARE and EXECUTE [IMMEDIATE], so that WithDynamicSQL does not let a literal
// statement that writes a reserved object through; only "a body built at run time
// (CONCAT(…))" is not seen. MariaDB also takes the statement as a hexadecimal literal
// (X'…', 0x…, with or without a character-set introducer): a constant the wrapper could
// read, but the body check does not decode it (the plain, N'…', _binary'…' and adjacent
// spellings are refused). `PREPARE s FROM X'<UPDATE fencedsql_floor SET floor = 0>'` +
// EXECUTE, and EXECUTE IMMEDIATE 0x…, run through the fenced pool, the floor goes to 0,
// and a write under token 40 with the floor at 50 is accepted.
//
// Right behaviour: decode hexadecimal (and bit) string literals, with or without an
// introducer, before the body checks, or refuse PREPARE/EXECUTE IMMEDIATE of a literal
// in a form the checks cannot read.
func TestDynamicHexBodyLoweringFloorRefused(t *testing.T) {
	lower := fmt.Sprintf("%X", "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1")
	requireFloorLiteralsRefused(t, []string{"EXECUTE IMMEDIATE 'UPDATE fencedsql_floor SET floor = 0 WHERE id = 1'"}, []floorLiteralCase{
		{"prepare-x", "PREPARE rt20t FROM X'" + lower + "'", "EXECUTE rt20t"},
		{"execute-immediate-0x", "EXECUTE IMMEDIATE 0x" + lower, ""},
		{"introducer", "EXECUTE IMMEDIATE _latin1 X'" + lower + "'", ""},
	})
}

// floorWriteRefused requires err, the answer to a statement whose literal spells a write of
// the floor in a form the checks must decode, to be the planner's refusal.
func floorWriteRefused(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported (the decoded literal names the floor)", err)
	}
}

// Red-team rt21b: the last commit's literal decoding (plan/protect_literal.go) and the
// token floor's locking read (G14 "A raise returns when no older write can still
// commit").

// utf16Spelling returns s encoded as UTF-16 (big endian: MySQL's utf16/ucs2), in hex.
func utf16Spelling(s string, littleEndian bool) string {
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

// TestDynamicWideCharsetHexLoweringFloorRefused (fail-open under WithDynamicSQL; naive
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
func TestDynamicWideCharsetHexLoweringFloorRefused(t *testing.T) {
	const lower = "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
	u32 := func(s string) string {
		var b []byte
		for _, r := range s {
			b = append(b, 0, 0, byte(r>>8), byte(r))
		}
		return hex.EncodeToString(b)
	}
	requireFloorLiteralsRefused(t, []string{"EXECUTE IMMEDIATE '" + lower + "'", "EXECUTE IMMEDIATE 0x" + hex.EncodeToString([]byte(lower))}, []floorLiteralCase{
		{"utf16-x", "EXECUTE IMMEDIATE _utf16 X'" + utf16Spelling(lower, false) + "'", ""},
		{"utf16le-0x", "EXECUTE IMMEDIATE _utf16le 0x" + utf16Spelling(lower, true), ""},
		{"utf32-prepare", "PREPARE rt21b FROM _utf32 X'" + u32(lower) + "'", "EXECUTE rt21b"},
	})
}

// Red-team rt22a: the planner's literal checks (plan/protect_literal.go,
// protect_strings.go) on MariaDB 10.11.

// wideSpelling spells s as a MySQL string literal whose bytes are s in UTF-16 (big-endian,
// le: little-endian) or UTF-32 (width 4), each NUL byte written as the escape \0.
func wideSpelling(s string, width int, le bool) string {
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

// TestDynamicIntroducedStringLoweringFloorRefused (fail-open under WithDynamicSQL).
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
func TestDynamicIntroducedStringLoweringFloorRefused(t *testing.T) {
	const lower = "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
	requireFloorLiteralsRefused(t, []string{"EXECUTE IMMEDIATE '" + lower + "'"}, []floorLiteralCase{
		{"utf16-string", "EXECUTE IMMEDIATE _utf16" + wideSpelling(lower, 2, false), ""},
		{"utf16le-string", "EXECUTE IMMEDIATE _utf16le" + wideSpelling(lower, 2, true), ""},
		{"utf32-prepare", "PREPARE rt22a FROM _utf32" + wideSpelling(lower, 4, false), "EXECUTE rt22a"},
	})
}
