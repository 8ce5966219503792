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
	if p.rw.syn.ExecComments && (txt[0] == '\'' || txt[0] == '"') && p.wideIntroducer(i) {
		// _utf16'…': the string's bytes read in the introducer's set (red-team rt22a F1).
		return p.quoteLiteral(p.introduced(i, mysqlStringBytes(txt)))
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

// wideIntroducer reports whether the literal at sig[i] follows an introducer of a
// character set whose units are wider than a byte (introduced decodes those).
func (p *parser) wideIntroducer(i int) bool {
	if i == 0 || p.sig[i-1].Kind != sqllex.KindWord {
		return false
	}
	switch strings.ToLower(p.text(p.sig[i-1])) {
	case "_utf16", "_ucs2", "_utf16le", "_utf32":
		return true
	}
	return false
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
func (p *parser) quoteLiteral(s string) string { return p.rw.QuoteLiteral(s) }

// protectUnicodeEscapes refuses, on PostgreSQL, a statement that chooses its own
// Unicode escape character (UESCAPE 'c' after a U&'…' string or a U&"…" name):
// such a spelling can carry any name past the checks — a literal continued on the
// next line, an escape string continued (red-team rt20t F3, rt21b F2) — and
// applications do not write it. protectReachBodies applies it to the statements of a
// body. A U&'…' or U&"…" with the default backslash escape is decoded (stringBody,
// decodeLoose); the word in data ('see UESCAPE') is no clause.
func (p *parser) protectUnicodeEscapes() error {
	if !p.rw.syn.DollarQuotes {
		return nil
	}
	for i, t := range p.sig {
		if t.Kind == sqllex.KindWord && p.kw(i, "UESCAPE") && p.stringLike(i+1) {
			return unsupported("", "UESCAPE on a pool with guarded tables: a Unicode-escape string or name with an escape character of its own can spell a guard object's name past the checks")
		}
	}
	return nil
}

// mysqlStringBytes returns the bytes a MySQL/MariaDB quoted string holds, exactly as
// the server reads them with backslash escapes on: its doubled quote undoubled, \0
// NUL, \b \n \r \t, \Z (0x1A), \% and \_ kept with their backslash, any other \c
// as c — no octal or hexadecimal escapes (decodeLoose's \01 would shift a wide
// character set's units).
func mysqlStringBytes(txt string) string {
	quote := txt[0]
	inner := txt[1 : len(txt)-1]
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		switch {
		case c == quote && i+1 < len(inner) && inner[i+1] == quote:
			b.WriteByte(quote)
			i++
		case c == '\\' && i+1 < len(inner):
			i++
			switch e := inner[i]; e {
			case '0':
				b.WriteByte(0)
			case 'b':
				b.WriteByte('\b')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'Z':
				b.WriteByte(0x1a)
			case '%', '_':
				b.WriteByte('\\')
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
