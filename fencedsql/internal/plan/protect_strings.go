// What a string literal holds: its body and the guard objects or settings it mentions.

package plan

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// stringBody returns the text a string literal holds: a dollar-quoted body without its
// tags, a quoted literal without its quotes and prefix, doubled quotes undoubled, then
// backslash escapes decoded loosely.
func stringBody(txt string) string {
	if strings.HasPrefix(txt, "$") {
		if k := strings.IndexByte(txt[1:], '$'); k >= 0 {
			tag := txt[:k+2]
			if len(txt) >= 2*len(tag) && strings.HasSuffix(txt, tag) {
				return txt[len(tag) : len(txt)-len(tag)]
			}
		}
		return txt
	}
	q := strings.IndexAny(txt, `'"`)
	if q < 0 || len(txt) < q+2 {
		return txt
	}
	quote := txt[q]
	// Doubled quotes first, then the escapes: a quote an escape produced (\') never
	// pairs with the next (E'\'\'' is two quotes, not one: red-team rt22a F2).
	inner := strings.ReplaceAll(txt[q+1:len(txt)-1], string([]byte{quote, quote}), string(quote))
	if strings.IndexByte(inner, '\\') >= 0 {
		inner = decodeLoose(txt[:q] + inner)[q:]
	}
	return inner
}

// stringMentions returns the first word (a prefix, for guardPrefix) that the string
// literal's text holds at an identifier boundary, after decoding backslash escapes
// loosely (E'…', U&'…', MySQL strings: more matches, never fewer), or "".
func stringMentions(txt string, words ...string) string {
	bodies := [3]string{strings.ToLower(txt), "", ""}
	if strings.IndexByte(txt, '\\') >= 0 {
		bodies[1] = strings.ToLower(decodeLoose(txt))
	}
	if strings.HasPrefix(txt, "$") {
		// A dollar-quoted body without its tags: the $ that ends the opening tag is an
		// identifier byte, which hid a name right after it (red-team rt20t F2).
		bodies[2] = strings.ToLower(stringBody(txt))
	}
	for _, body := range bodies {
		for _, w := range words {
			for at := 0; at < len(body); {
				k := strings.Index(body[at:], w)
				if k < 0 {
					break
				}
				k += at
				end := k + len(w)
				prefix := w == guardPrefix
				if !identByte(body, k-1) && (prefix || !identByte(body, end)) &&
					!(prefix && strings.HasPrefix(body[k:], lockTablePrefix)) {
					return w
				}
				at = k + 1
			}
		}
	}
	return ""
}

// decodeLoose decodes the backslash escapes of PostgreSQL's E'…' and U&'…' strings and
// MySQL's strings: \xHH, \ooo, \uXXXX, \UXXXXXXXX, \XXXX and \+XXXXXX (U&), \c → c.
func decodeLoose(s string) string {
	unicodeForm := len(s) > 2 && (s[0] == 'U' || s[0] == 'u') && s[1] == '&'
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		rest := s[i+1:]
		hex := func(n int, from int) (rune, bool) {
			if len(rest) < from+n {
				return 0, false
			}
			v, err := strconv.ParseUint(rest[from:from+n], 16, 32)
			return rune(v), err == nil
		}
		switch {
		case unicodeForm && rest[0] == '+':
			if r, ok := hex(6, 1); ok {
				b.WriteRune(r)
				i += 7
				continue
			}
		case unicodeForm:
			if r, ok := hex(4, 0); ok {
				b.WriteRune(r)
				i += 4
				continue
			}
		case rest[0] == 'x':
			n := 0
			for n < 2 && n+1 < len(rest) && strings.IndexByte("0123456789abcdefABCDEF", rest[n+1]) >= 0 {
				n++
			}
			if r, ok := hex(n, 1); ok && n > 0 {
				b.WriteRune(r)
				i += 1 + n
				continue
			}
		case rest[0] == 'u':
			if r, ok := hex(4, 1); ok {
				b.WriteRune(r)
				i += 5
				continue
			}
		case rest[0] == 'U':
			if r, ok := hex(8, 1); ok && utf8.ValidRune(r) {
				b.WriteRune(r)
				i += 9
				continue
			}
		case rest[0] >= '0' && rest[0] <= '7':
			n, v := 0, 0
			for n < 3 && n < len(rest) && rest[n] >= '0' && rest[n] <= '7' {
				v = v*8 + int(rest[n]-'0')
				n++
			}
			b.WriteByte(byte(v))
			i += n
			continue
		}
		b.WriteByte(rest[0])
		i++
	}
	return b.String()
}

// stringTexts returns the text of each string literal of sig[from:to] and, after each
// run of literals that follow one another, the run joined: PostgreSQL joins literals
// separated by a newline ('acc'⏎'ounts' is 'accounts') and MySQL any adjacent ones, so
// a name split across them is a name (a red-team pass carried a guarded table's name
// into CREATE FOREIGN TABLE … OPTIONS (table_name …) this way). A run is joined
// whatever separates its literals: more matches, never fewer.
func (p *parser) stringTexts(from, to int) []string {
	var out []string
	for i := from; i < to && i < len(p.sig); i++ {
		if !p.stringLike(i) {
			continue
		}
		out = append(out, p.literalText(i))
		if i+1 >= to || i+1 >= len(p.sig) || !p.stringLike(i+1) {
			continue
		}
		var run strings.Builder
		run.WriteString(stringBody(p.literalText(i)))
		for i+1 < to && i+1 < len(p.sig) && p.stringLike(i+1) {
			i++
			out = append(out, p.literalText(i))
			run.WriteString(stringBody(p.literalText(i)))
		}
		out = append(out, "'"+run.String()+"'")
	}
	return out
}
