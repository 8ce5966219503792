// The fuzz oracle's reading of names: identifiers decoded as the server reads them, guarded names, keywords.

package fencedsql

import (
	"slices"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// fzMayMention reports whether the text names a guarded table in any spelling the
// rewriter's pre-filter must catch.
func fzMayMention(rw testPlanner, src string) bool {
	for _, n := range fzNames {
		if plan.ContainsFold(src, n) {
			return true
		}
	}
	return rw.Syntax().EStrings && (strings.Contains(src, `U&"`) || strings.Contains(src, `u&"`))
}

// fzGuarded reports whether a name (its parts, unquoted) is a guarded table, with the
// rewriter's matching rules (G13: by the last name part, whatever the qualifier):
// "accounts" and "orders" (configured as shop.orders) under any qualifier or none.
func fzGuarded(parts []string) bool {
	if len(parts) == 0 {
		return false
	}
	last := strings.ToLower(parts[len(parts)-1])
	switch last {
	case "accounts", "orders":
		return true
	}
	return false
}

func fzPunct(src string, tk sqllex.Token, s string) bool {
	return tk.Kind == sqllex.KindPunct && tk.Text(src) == s
}

// fzIdent decodes an identifier token the way the server reads it; undecodable is true
// for a quoted identifier whose name the lexer cannot decode (U&"…"), which may name
// anything.
func fzIdent(src string, tk sqllex.Token, rw testPlanner) (name string, ok, undecodable bool) {
	switch tk.Kind {
	case sqllex.KindWord:
		return tk.Text(src), true, false
	case sqllex.KindQuotedIdent:
		n, _, ok := sqllex.Ident(src, tk)
		if !ok {
			txt := tk.Text(src)
			if !strings.HasPrefix(txt, "U&") && !strings.HasPrefix(txt, "u&") {
				return "", false, false // "" and the like: no identifier at all
			}
			if n, ok := fzDecodeUnicodeIdent(txt); ok && !plan.ContainsFold(src, "uescape") {
				return n, true, false
			}
			return "", false, true
		}
		return n, true, false
	case sqllex.KindString:
		txt := tk.Text(src)
		if (rw.Syntax() == sqllex.SQLite) && len(txt) >= 2 && txt[0] == '\'' && txt[len(txt)-1] == '\'' {
			return strings.ReplaceAll(txt[1:len(txt)-1], "''", "'"), true, false
		}
	}
	return "", false, false
}

// fzDecodeUnicodeIdent decodes PostgreSQL's U&"…" identifier with the default escape
// character (\XXXX, \+XXXXXX, \\); ok is false for any other byte that is not a letter,
// digit or underscore. The caller treats text with a UESCAPE clause as undecodable.
func fzDecodeUnicodeIdent(txt string) (string, bool) {
	if len(txt) < 4 || (txt[0] != 'U' && txt[0] != 'u') || txt[1] != '&' || txt[2] != '"' || txt[len(txt)-1] != '"' {
		return "", false
	}
	body := strings.ReplaceAll(txt[3:len(txt)-1], `""`, `"`)
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			if !(c == '_' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z' || c >= 0x80) {
				return "", false
			}
			b.WriteByte(c)
			continue
		}
		n := 4
		if i+1 < len(body) && body[i+1] == '\\' {
			b.WriteByte('\\')
			i++
			continue
		}
		if i+1 < len(body) && body[i+1] == '+' {
			n = 6
			i++
		}
		if i+n >= len(body) {
			return "", false
		}
		var r rune
		for _, h := range body[i+1 : i+1+n] {
			switch {
			case h >= '0' && h <= '9':
				r = r*16 + h - '0'
			case h|0x20 >= 'a' && h|0x20 <= 'f':
				r = r*16 + (h | 0x20) - 'a' + 10
			default:
				return "", false
			}
		}
		b.WriteRune(r)
		i += n
	}
	return b.String(), b.Len() > 0
}

// fzName reads ident ('.' ident)* at sig[i]; undecodable reports a U&"…" part.
func fzName(src string, sig []sqllex.Token, i int, rw testPlanner) (parts []string, end int, ok bool) {
	for i < len(sig) {
		n, ok, undecodable := fzIdent(src, sig[i], rw)
		if undecodable {
			return append(parts, "\x00undecodable"), i + 1, true
		}
		if !ok {
			return nil, i, false
		}
		parts = append(parts, n)
		i++
		if i < len(sig) && fzPunct(src, sig[i], ".") {
			i++
			continue
		}
		return parts, i, true
	}
	return nil, i, false
}

// fzNameGuarded: the name at sig[i] is a guarded table, or cannot be decoded.
func fzNameGuarded(src string, sig []sqllex.Token, i int, rw testPlanner) bool {
	parts, _, ok := fzName(src, sig, i, rw)
	return ok && (fzGuarded(parts) || slices.Contains(parts, "\x00undecodable"))
}

func fzKw(src string, sig []sqllex.Token, i int, kws ...string) bool {
	if i >= len(sig) {
		return false
	}
	for _, kw := range kws {
		if sqllex.IsKeyword(src, sig[i], kw) {
			return true
		}
	}
	return false
}

// fzSig returns the significant tokens of src, nil when it does not lex.
func fzSig(src string, rw testPlanner) []sqllex.Token {
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		return nil
	}
	return sqllex.Significant(toks)
}
