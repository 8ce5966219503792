// A literal as the server reads it, where its token's text is not that reading.

package plan

import (
	"strconv"
	"strings"
	"unicode/utf8"

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
// what the server reads, where the token's own text is not that: PostgreSQL's U&'…'
// with the escape character a following UESCAPE 'c' names, and MySQL/MariaDB's
// hexadecimal and bit literals (X'…', B'…', 0x…, 0b…, after an optional character set
// introducer, a token of its own). Else the token's text. The string checks read this
// text (red-team rt20t F3: a body spelled U&'… fenced!0073ql_floor …' UESCAPE '!' or
// X'…' went past them).
func (p *parser) literalText(i int) string {
	txt := p.text(p.sig[i])
	if p.sig[i].Kind == sqllex.KindNumber {
		if b, ok := p.radixNumber(txt); ok {
			return p.quoteLiteral(b)
		}
		return txt
	}
	if len(txt) > 3 && (txt[0] == 'U' || txt[0] == 'u') && txt[1] == '&' && txt[2] == '\'' {
		if c, ok := p.uescape(i); ok {
			inner := strings.ReplaceAll(txt[3:len(txt)-1], "''", "'")
			return p.quoteLiteral(decodeUnicodeEscapes(inner, c))
		}
		return txt
	}
	if p.rw.syn.ExecComments && len(txt) > 2 && txt[1] == '\'' {
		switch txt[0] | 0x20 {
		case 'x':
			if b, ok := radixBytes(txt[2:len(txt)-1], 16); ok {
				return p.quoteLiteral(b)
			}
		case 'b':
			if b, ok := radixBytes(txt[2:len(txt)-1], 2); ok {
				return p.quoteLiteral(b)
			}
		}
	}
	return txt
}

// uescape returns the escape character of the U&'…' literal at sig[i]: the one
// character of the UESCAPE 'c' after it, or false when there is none (the default
// backslash, which stringBody decodes).
func (p *parser) uescape(i int) (byte, bool) {
	if !p.kw(i+1, "UESCAPE") || i+2 >= len(p.sig) || p.sig[i+2].Kind != sqllex.KindString {
		return 0, false
	}
	e := p.text(p.sig[i+2])
	if len(e) == 3 && e[0] == '\'' && e[2] == '\'' {
		return e[1], true
	}
	if e == "''''" {
		return '\'', true
	}
	return 0, false
}

// decodeUnicodeEscapes decodes a U&'…' body whose escape character is c: cc is c,
// cXXXX and c+XXXXXX are code points; anything else is kept.
func decodeUnicodeEscapes(s string, c byte) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != c || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		rest := s[i+1:]
		switch {
		case rest[0] == c:
			b.WriteByte(c)
			i++
			continue
		case rest[0] == '+' && len(rest) >= 7:
			if v, err := strconv.ParseUint(rest[1:7], 16, 32); err == nil && utf8.ValidRune(rune(v)) {
				b.WriteRune(rune(v))
				i += 7
				continue
			}
		case len(rest) >= 4:
			if v, err := strconv.ParseUint(rest[:4], 16, 32); err == nil {
				b.WriteRune(rune(v))
				i += 4
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
