// A literal as the server reads it, where its token's text is not that reading.

package plan

import (
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// stringLike reports whether sig[i] is a literal the server may take as a string of
// SQL text: a string literal, or on MySQL/MariaDB a hexadecimal or bit number
// (0x…, 0b…), which a string context reads as the bytes it spells (EXECUTE IMMEDIATE
// 0x…, PREPARE s FROM 0x…).
func (p *parser) stringLike(i int) bool {
	if i < 0 || i >= len(p.sig) {
		return false
	}
	switch p.sig[i].Kind {
	case sqllex.KindString:
		return true
	case sqllex.KindNumber:
		_, ok := p.radixNumber(p.text(p.sig[i]))
		return ok
	}
	return false
}

// literalText returns the text of the literal at sig[i] as a plain quoted literal of
// what the server reads, where the token's own text is not that: MySQL/MariaDB's
// hexadecimal and bit literals (X'…', B'…', 0x…, 0b…), as the bytes they spell in the
// character set of an introducer before them (_utf16 X'…' is UTF-16). Else the token's
// text. The string checks read this text (red-team rt20t F3: a body spelled X'…' went
// past them). PostgreSQL's Unicode escapes with an escape character of their own are
// refused instead (protectUnicodeEscapes).
func (p *parser) literalText(i int) string {
	txt := p.text(p.sig[i])
	if p.sig[i].Kind == sqllex.KindNumber {
		if b, ok := p.radixNumber(txt); ok {
			return p.quoteLiteral(p.introduced(i, b))
		}
		return txt
	}
	if p.rw.syn.ExecComments && len(txt) > 2 && txt[1] == '\'' {
		switch txt[0] | 0x20 {
		case 'x':
			if b, ok := radixBytes(txt[2:len(txt)-1], 16); ok {
				return p.quoteLiteral(p.introduced(i, b))
			}
		case 'b':
			if b, ok := radixBytes(txt[2:len(txt)-1], 2); ok {
				return p.quoteLiteral(p.introduced(i, b))
			}
		}
	}
	return txt
}

// introduced returns the bytes b of the literal at sig[i] read in the character set an
// introducer before it names (_utf16 X'…'): UTF-16 (big- or little-endian, ucs2 too)
// and UTF-32 decoded, any other set as the bytes themselves (ASCII reads the same in
// all of them; red-team rt21b F1: _utf16 X'…' spelled a write of the floor).
func (p *parser) introduced(i int, b string) string {
	if i == 0 || p.sig[i-1].Kind != sqllex.KindWord {
		return b
	}
	cs := strings.ToLower(p.text(p.sig[i-1]))
	width, little := 0, false
	switch cs {
	case "_utf16", "_ucs2":
		width = 2
	case "_utf16le":
		width, little = 2, true
	case "_utf32":
		width = 4
	default:
		return b
	}
	if r := len(b) % width; r != 0 {
		b = strings.Repeat("\x00", width-r) + b // MySQL pads on the left
	}
	units := make([]uint32, 0, len(b)/width)
	for k := 0; k+width <= len(b); k += width {
		var u uint32
		for j := 0; j < width; j++ {
			c := uint32(b[k+j])
			if little {
				u |= c << (8 * j)
			} else {
				u = u<<8 | c
			}
		}
		units = append(units, u)
	}
	var out strings.Builder
	if width == 4 {
		for _, u := range units {
			out.WriteRune(rune(u))
		}
		return out.String()
	}
	u16 := make([]uint16, len(units))
	for k, u := range units {
		u16[k] = uint16(u)
	}
	for _, r := range utf16.Decode(u16) {
		out.WriteRune(r)
	}
	return out.String()
}

// radixNumber decodes a MySQL/MariaDB 0x… or 0b… number into the bytes it spells.
func (p *parser) radixNumber(txt string) (string, bool) {
	if !p.rw.syn.ExecComments || len(txt) < 3 || txt[0] != '0' {
		return "", false
	}
	switch txt[1] {
	case 'x':
		return radixBytes(txt[2:], 16)
	case 'b':
		return radixBytes(txt[2:], 2)
	}
	return "", false
}

// radixBytes decodes hexadecimal (base 16) or binary (base 2) digits into bytes, the
// first byte taking the digits left over (as MySQL pads an odd 0x… on the left).
func radixBytes(digits string, base int) (string, bool) {
	per := 2
	if base == 2 {
		per = 8
	}
	if digits == "" {
		return "", true
	}
	if r := len(digits) % per; r != 0 {
		digits = strings.Repeat("0", per-r) + digits
	}
	out := make([]byte, 0, len(digits)/per)
	for k := 0; k < len(digits); k += per {
		v, err := strconv.ParseUint(digits[k:k+per], base, 8)
		if err != nil {
			return "", false
		}
		out = append(out, byte(v))
	}
	return string(out), true
}

// quoteLiteral quotes s as a string literal of the statement's syntax (quotes doubled,
// and backslashes where the syntax reads them as escapes), so that stringBody gives s
// back.
func (p *parser) quoteLiteral(s string) string {
	if p.rw.syn.BackslashEscapes {
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// protectUnicodeEscapes refuses, on PostgreSQL, a statement that chooses its own
// Unicode escape character (UESCAPE, after a U&'…' string or a U&"…" name), in its
// own text or in a body it holds: such a spelling can carry any name past the checks
// — a literal continued on the next line, an escape string continued, a body's own
// literal (red-team rt20t F3, rt21b F2) — and applications do not write it. A U&'…'
// or U&"…" with the default backslash escape is decoded (stringBody, decodeLoose).
func (p *parser) protectUnicodeEscapes() error {
	if !p.rw.syn.DollarQuotes {
		return nil
	}
	for i, t := range p.sig {
		switch {
		case t.Kind == sqllex.KindWord && p.kw(i, "UESCAPE"):
			return unsupported("", "UESCAPE on a pool with guarded tables: a Unicode-escape string or name with an escape character of its own can spell a guard object's name past the checks")
		case t.Kind == sqllex.KindString:
			txt := strings.ToLower(p.text(t))
			if nestedUnicodeEscape(txt) {
				return unsupported("", "a string or body holding a UESCAPE clause on a pool with guarded tables: a Unicode-escape literal with an escape character of its own can spell a guard object's name past the checks")
			}
		}
	}
	return nil
}

// nestedUnicodeEscape reports whether a literal's text (lower-cased) holds a UESCAPE
// clause — the word, then a quote after blanks — as a body's own statements would
// write it. The word alone in data ('t_uescape_db') is not one. (A body's U&'…' and
// U&"…" with the default escape are decoded by protectReachBodies.)
func nestedUnicodeEscape(txt string) bool {
	for at := 0; at < len(txt); {
		k := strings.Index(txt[at:], "uescape")
		if k < 0 {
			return false
		}
		rest := strings.TrimLeft(txt[at+k+len("uescape"):], " \t\r\n\f")
		if strings.HasPrefix(rest, "'") {
			return true
		}
		at += k + 1
	}
	return false
}
