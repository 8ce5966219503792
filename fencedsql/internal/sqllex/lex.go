package sqllex

import "strings"

// maxParamNum bounds $n and ?NNN placeholder numbers; larger ones are
// rejected (no server binds them: PostgreSQL's protocol carries at most
// 65535 parameters, SQLite's default limit is 32766).
const maxParamNum = 99999

// Error messages. They never include any of the SQL text.
const (
	msgNUL             = "NUL byte in SQL text"
	msgBOM             = "byte order mark at start of token"
	msgString          = "unterminated string literal"
	msgQuotedIdent     = "unterminated quoted identifier"
	msgDollarString    = "unterminated dollar-quoted string"
	msgComment         = "unterminated block comment"
	msgExecComment     = "unterminated executable comment"
	msgAmbiguousExec   = "ambiguous executable comment (quote, comment or nested /* inside)"
	msgAmbiguousDashes = "ambiguous -- followed by a non-ASCII byte"
	msgDollar          = "unrecognized $ form"
	msgQuestion        = "unrecognized ? form"
	msgNamedParam      = "unrecognized named parameter form"
	msgParamRange      = "parameter number out of range"
	msgNumberJunk      = "identifier character directly after number or parameter"
)

// Byte classes.
const (
	ccIdentStart uint8 = 1 << iota // A-Z a-z _ and bytes >= 0x80
	ccDigit                        // 0-9
	ccDollar                       // $
	ccSpace                        // ASCII whitespace
	ccHex                          // 0-9 a-f A-F

	ccIdentCont = ccIdentStart | ccDigit | ccDollar
)

var charClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] |= ccIdentStart
		t[c-'a'+'A'] |= ccIdentStart
	}
	t['_'] |= ccIdentStart
	for c := 0x80; c <= 0xff; c++ {
		t[c] |= ccIdentStart
	}
	for c := '0'; c <= '9'; c++ {
		t[c] |= ccDigit | ccHex
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] |= ccHex
		t[c-'a'+'A'] |= ccHex
	}
	t['$'] |= ccDollar
	for _, c := range []byte{' ', '\t', '\n', '\r', '\f', '\v'} {
		t[c] |= ccSpace
	}
	return t
}()

func isIdentCont(c byte) bool { return charClass[c]&ccIdentCont != 0 }
func isDigit(c byte) bool     { return '0' <= c && c <= '9' }

// Lex splits src into tokens covering every byte of src exactly once, in
// order: concatenating src[t.Start:t.End] over all tokens gives back src,
// and every token is non-empty.
//
// It fails closed: it returns a nil slice and a *Error for an unterminated
// string, quoted identifier, dollar-quoted string or block comment, for a
// "$", "?" or named-parameter form it cannot classify, for a NUL byte
// anywhere, and for the other ambiguous forms listed in the package
// documentation. It never panics, whatever the input (including invalid
// UTF-8).
func Lex(src string, syn Syntax) ([]Token, error) {
	// Typical SQL has a token every 2.5 to 3 bytes; one allocation covers
	// it. Huge inputs grow by append instead of reserving a third of their
	// length up front.
	toks, err := LexAppend(make([]Token, 0, min(len(src)/3+16, 4096)), src, syn)
	if err != nil {
		return nil, err
	}
	return toks, nil
}

// LexAppend is Lex appending the tokens to dst, so that a caller can reuse
// one slice across statements. On error it returns dst unchanged (same
// length; elements past it may have been overwritten) and the *Error.
func LexAppend(dst []Token, src string, syn Syntax) ([]Token, error) {
	base := len(dst)
	toks, e := lexAppend(dst, src, &syn)
	if e != nil {
		return dst[:base], e
	}
	return toks, nil
}

func lexAppend(dst []Token, src string, syn *Syntax) ([]Token, *Error) {
	// A NUL byte ends the statement early in SQLite and in parts of the
	// MySQL lexer, and is rejected by PostgreSQL: refuse it everywhere,
	// before it can hide inside a comment or string.
	if p := strings.IndexByte(src, 0); p >= 0 {
		return dst, &Error{Pos: p, Msg: msgNUL}
	}
	base := len(dst)
	n := len(src)
	// PostgreSQL continues a string literal over whitespace containing a
	// newline and lexes the continuation with the first part's rules: cont
	// records where such a continuing quote is after an E'..' (escapes) or
	// X'..'/B'..' (raw) literal, and with which rules to lex it.
	cont := continuation{pos: -1}
	i := 0
	for i < n {
		start := i
		c := src[i]
		kind := KindPunct
		num := 0
		var err *Error
		switch c {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			i++
			for i < n && charClass[src[i]]&ccSpace != 0 {
				i++
			}
			kind = KindSpace

		case '\'':
			kind = KindString
			if start == cont.pos {
				i, err = scanString(src, i, cont.mode)
				cont.pos = pgContinuation(src, i)
			} else {
				i, err = scanQuoted(src, i, syn.BackslashEscapes, msgString)
			}

		case '"':
			if syn.DoubleQuoteStrings {
				kind = KindString
				i, err = scanQuoted(src, i, syn.BackslashEscapes, msgString)
			} else {
				kind = KindQuotedIdent
				i, err = scanQuoted(src, i, false, msgQuotedIdent)
			}

		case '`':
			i++
			if syn.Backticks {
				kind = KindQuotedIdent
				i, err = scanQuoted(src, start, false, msgQuotedIdent)
			}

		case '[':
			i++
			if syn.Brackets {
				kind = KindQuotedIdent
				var ok bool
				if i, ok = scanBracket(src, start, syn); !ok {
					err = &Error{Pos: start, Msg: msgQuotedIdent}
				}
			}

		case '-':
			i++
			if i < n && src[i] == '-' {
				var isComment bool
				if isComment, err = dashComment(src, start, syn); isComment {
					kind = KindComment
					i = lineEnd(src, i+1, syn.CRLineEnd)
				}
			} else if i < n && src[i] == '>' {
				i++
				if i < n && src[i] == '>' {
					i++
				}
			}

		case '/':
			i++
			if i < n && src[i] == '*' {
				if syn.ExecComments && i+1 < n && (src[i+1] == '!' || src[i+1] == '+' ||
					(src[i+1] == 'M' && i+2 < n && src[i+2] == '!')) {
					kind = KindExecComment
					i, err = scanExecComment(src, start, syn)
				} else {
					kind = KindComment
					i, err = scanBlockComment(src, start, syn.NestedComments)
				}
			}

		case '#':
			switch {
			case syn.HashComments:
				kind = KindComment
				i = lineEnd(src, i+1, syn.CRLineEnd)
			case syn.NamedParams:
				kind = KindParam
				i, err = scanNamedParam(src, i)
			default:
				i++
				if i < n && src[i] == '>' {
					i++
					if i < n && src[i] == '>' {
						i++
					}
				}
			}

		case '$':
			kind, i, num, err = lexDollar(src, i, syn)

		case '?':
			i++
			switch {
			case syn.NamedParams:
				kind = KindParam
				if i < n && isDigit(src[i]) {
					i, num, err = scanParamNumber(src, i)
				} else if i < n && isIdentCont(src[i]) {
					err = &Error{Pos: start, Msg: msgQuestion}
				}
			case syn.QuestionParams:
				kind = KindParam
				// MySQL only takes ? as a placeholder when no identifier
				// character follows.
				if i < n && isIdentCont(src[i]) {
					err = &Error{Pos: start, Msg: msgQuestion}
				}
			default:
				if i < n && (src[i] == '|' || src[i] == '&') {
					i++
				}
			}

		case ':':
			if syn.NamedParams {
				kind = KindParam
				i, err = scanNamedParam(src, i)
			} else {
				i++
				if i < n && (src[i] == ':' || src[i] == '=') {
					i++
				}
			}

		case '@':
			if syn.NamedParams {
				kind = KindParam
				i, err = scanNamedParam(src, i)
			} else {
				i++
				if i < n && (src[i] == '>' || src[i] == '@') {
					i++
				}
			}

		case '.':
			i++
			if i < n && isDigit(src[i]) {
				// ".5" is a number, but not right after a name: t.5 is
				// word, '.', number.
				if last := len(dst) - 1; last < base || dst[last].End != start ||
					(dst[last].Kind != KindWord && dst[last].Kind != KindQuotedIdent) {
					kind = KindNumber
					i, err = scanNumber(src, start)
				}
			}

		case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			kind = KindNumber
			i, err = scanNumber(src, i)

		case '<':
			i++
			if i < n {
				switch src[i] {
				case '=':
					i++
					if i < n && src[i] == '>' {
						i++
					}
				case '>', '<', '@':
					i++
				}
			}

		case '>':
			i++
			if i < n && (src[i] == '=' || src[i] == '>') {
				i++
			}

		case '=':
			i++
			if i < n && (src[i] == '=' || src[i] == '>') {
				i++
			}

		case '!':
			i++
			if i < n {
				switch src[i] {
				case '=':
					i++
				case '~':
					i++
					if i < n && src[i] == '*' {
						i++
					}
				}
			}

		case '|':
			i++
			if i < n && src[i] == '|' {
				i++
			}

		case '&':
			i++
			if i < n && src[i] == '&' {
				i++
			}

		case '~':
			i++
			if i < n && src[i] == '*' {
				i++
			}

		default:
			if charClass[c]&ccIdentStart == 0 {
				i++ // any other byte is a one-byte punctuation token
				break
			}
			if c == 0xef && strings.HasPrefix(src[i:], "\xef\xbb\xbf") {
				// SQLite reads a UTF-8 BOM at the start of a token as
				// whitespace, PostgreSQL and MySQL as identifier bytes.
				err = &Error{Pos: start, Msg: msgBOM}
				break
			}
			kind = KindWord
			i++
			for i < n && charClass[src[i]]&ccIdentCont != 0 {
				i++
			}
			if i-start == 1 && i < n {
				kind, i, err = stringPrefix(src, start, syn, kind, &cont)
			}
		}
		if err != nil {
			return dst[:base], err
		}
		dst = append(dst, Token{Kind: kind, Start: start, End: i, Num: num})
	}
	return dst, nil
}

// String literal rules.
const (
	modeStd = iota // '' doubles a quote, no escapes
	modeE          // '' doubles a quote, backslash escapes the next byte
	modeRaw        // X'..' and B'..': the first quote ends the literal
)

type continuation struct {
	pos  int // offset of the continuing quote, or -1
	mode int
}

// scanString scans a '...' literal at src[i] with the given rules.
func scanString(src string, i int, mode int) (int, *Error) {
	if mode == modeRaw {
		k := strings.IndexByte(src[i+1:], '\'')
		if k < 0 {
			return len(src), &Error{Pos: i, Msg: msgString}
		}
		return i + 1 + k + 1, nil
	}
	return scanQuoted(src, i, mode == modeE, msgString)
}

// stringPrefix handles a one-letter word at src[start] that may prefix a
// string literal: E'..' (EStrings), N'..', X'..', B'..' and U&'..'/U&".."
// (EStrings). It returns the token kind and end.
func stringPrefix(src string, start int, syn *Syntax, kind Kind, cont *continuation) (Kind, int, *Error) {
	i := start + 1
	switch src[i] {
	case '\'':
		mode := modeStd
		switch src[start] | 0x20 {
		case 'e':
			if !syn.EStrings {
				return kind, i, nil
			}
			mode = modeE
		case 'n':
			if syn.BackslashEscapes {
				mode = modeE
			}
		case 'x', 'b':
			// Hex and bit strings end at the first quote in all three
			// servers: no doubling, no escapes.
			mode = modeRaw
		default:
			return kind, i, nil
		}
		end, err := scanString(src, i, mode)
		if err == nil && syn.EStrings && mode != modeStd {
			*cont = continuation{pos: pgContinuation(src, end), mode: mode}
		}
		return KindString, end, err
	case '&':
		if syn.EStrings && src[start]|0x20 == 'u' && i+1 < len(src) {
			switch src[i+1] {
			case '\'':
				end, err := scanQuoted(src, i+1, false, msgString)
				return KindString, end, err
			case '"':
				end, err := scanQuoted(src, i+1, false, msgQuotedIdent)
				return KindQuotedIdent, end, err
			}
		}
	}
	return kind, i, nil
}

// scanQuoted scans a literal opened by the quote byte at src[i]: the same
// byte doubled stands for itself, and with esc a backslash escapes the next
// byte. It returns the offset just past the closing quote.
func scanQuoted(src string, i int, esc bool, msg string) (int, *Error) {
	q := src[i]
	n := len(src)
	j := i + 1
	if !esc {
		for {
			k := strings.IndexByte(src[j:], q)
			if k < 0 {
				return n, &Error{Pos: i, Msg: msg}
			}
			j += k + 1
			if j < n && src[j] == q {
				j++
				continue
			}
			return j, nil
		}
	}
	for j < n {
		switch src[j] {
		case '\\':
			j += 2
			continue
		case q:
			j++
			if j < n && src[j] == q {
				j++
				continue
			}
			return j, nil
		}
		j++
	}
	return n, &Error{Pos: i, Msg: msg}
}

// pgContinuation reports where a PostgreSQL string literal ending at end
// continues: SQL concatenates literals separated by whitespace containing a
// newline, and PostgreSQL lexes the continuation with the rules of the
// first part (so after E'..' a plain '..' still takes backslash escapes).
// It follows scan.l: {horiz_whitespace}*{newline}{special_whitespace}*{quote}
// where horiz_whitespace is [ \t\f] or a -- comment and special_whitespace
// is [ \t\n\r\f\v]+ or a -- comment followed by a newline. It returns the
// offset of the continuing quote, or -1.
func pgContinuation(src string, end int) int {
	n := len(src)
	i := end
	sawNewline := false
	for i < n {
		switch c := src[i]; c {
		case ' ', '\t', '\f':
			i++
		case '\v':
			if !sawNewline {
				return -1
			}
			i++
		case '\n', '\r':
			sawNewline = true
			i++
		case '-':
			if i+1 >= n || src[i+1] != '-' {
				return -1
			}
			i = lineEnd(src, i+2, true)
			if sawNewline && i >= n {
				return -1 // special_whitespace needs the newline after it
			}
		case '\'':
			if sawNewline {
				return i
			}
			return -1
		default:
			return -1
		}
	}
	return -1
}

// lineEnd returns the offset of the newline ending a line comment whose
// text continues at i (or len(src)).
func lineEnd(src string, i int, cr bool) int {
	if !cr {
		if k := strings.IndexByte(src[i:], '\n'); k >= 0 {
			return i + k
		}
		return len(src)
	}
	for ; i < len(src); i++ {
		if c := src[i]; c == '\n' || c == '\r' {
			return i
		}
	}
	return len(src)
}

// scanBlockComment scans the /* comment at src[i] and returns the offset
// just past its closing */.
func scanBlockComment(src string, i int, nested bool) (int, *Error) {
	if !nested {
		k := strings.Index(src[i+2:], "*/")
		if k < 0 {
			return len(src), &Error{Pos: i, Msg: msgComment}
		}
		return i + 2 + k + 2, nil
	}
	depth := 1
	j := i + 2
	for j+1 < len(src) {
		switch {
		case src[j] == '*' && src[j+1] == '/':
			j += 2
			if depth--; depth == 0 {
				return j, nil
			}
		case src[j] == '/' && src[j+1] == '*':
			j += 2
			depth++
		default:
			j++
		}
	}
	return len(src), &Error{Pos: i, Msg: msgComment}
}

// scanExecComment scans a MySQL/MariaDB /*! */, /*M! */ or /*+ */ comment
// at src[i]. Depending on the server version (and, for /*M!, on the
// product) the body is either skipped up to the first */ or lexed as SQL
// code that may hide a */ inside a string, quoted identifier or comment.
// It only accepts bodies for which every reading ends at the same first */
// (lexed as code, every quoted literal and comment in the body closes
// before it, and there is no nested /*) and fails closed otherwise.
func scanExecComment(src string, i int, syn *Syntax) (int, *Error) {
	body := i + 3 // past "/*!" or "/*+"
	if src[i+2] == 'M' {
		body++ // past "/*M!"
	}
	k := strings.Index(src[body:], "*/")
	if k < 0 {
		return len(src), &Error{Pos: i, Msg: msgExecComment}
	}
	t0 := body + k
	ambiguous := &Error{Pos: i, Msg: msgAmbiguousExec}
	for j := body; j < t0; {
		c := src[j]
		end := j + 1
		switch {
		case c == '\'' || c == '"' || c == '`' && syn.Backticks:
			if syn.EStrings {
				return t0, ambiguous // E'' and continuation rules: do not try
			}
			esc := syn.BackslashEscapes && (c == '\'' || syn.DoubleQuoteStrings && c == '"')
			e, err := scanQuoted(src, j, esc, msgString)
			if err != nil || e > t0 {
				return t0, ambiguous
			}
			if c == '\'' && j > body && (src[j-1]|0x20 == 'x' || src[j-1]|0x20 == 'b') {
				// X'..' and B'..' end at the first quote; whether the
				// letter is a prefix depends on what precedes it (a
				// version number, a parameter sigil, a longer word), so
				// both readings must end at the same place.
				if r, _ := scanString(src, j, modeRaw); r != e {
					return t0, ambiguous
				}
			}
			end = e
		case c == '[' && syn.Brackets:
			e, ok := scanBracket(src, j, syn)
			if !ok || e > t0 {
				return t0, ambiguous
			}
			end = e
		case c == '$' && syn.DollarQuotes:
			return t0, ambiguous
		case c == '#' && syn.HashComments:
			if end = lineEnd(src, j+1, syn.CRLineEnd); end > t0 {
				return t0, ambiguous
			}
		case c == '-' && src[j+1] == '-':
			isComment, err := dashComment(src, j, syn)
			if err != nil {
				return t0, ambiguous
			}
			if isComment {
				if end = lineEnd(src, j+2, syn.CRLineEnd); end > t0 {
					return t0, ambiguous
				}
			}
		case c == '/' && src[j+1] == '*':
			return t0, ambiguous
		}
		j = end
	}
	return t0 + 2, nil
}

// scanBracket scans the [quoted identifier] at src[i] and returns the index just
// past its closing ]: the first ], or with BracketDoubling the first ] not followed
// by another (]] stands for one ]). ok is false when it does not close (the
// returned index is then len(src)).
func scanBracket(src string, i int, syn *Syntax) (int, bool) {
	for j := i + 1; j < len(src); j++ {
		if src[j] != ']' {
			continue
		}
		if syn.BracketDoubling && j+1 < len(src) && src[j+1] == ']' {
			j++
			continue
		}
		return j + 1, true
	}
	return len(src), false
}

// dashComment reports whether the "--" at src[i] starts a comment.
func dashComment(src string, i int, syn *Syntax) (bool, *Error) {
	if !syn.DashCommentNeedsSpace || i+2 >= len(src) {
		return true, nil
	}
	switch b := src[i+2]; {
	case b <= ' ' || b == 0x7f:
		return true, nil
	case b >= 0x80:
		// MySQL decides with the connection character set's ctype table
		// (utf8mb4: not a comment, latin1 NBSP: a comment); do not guess.
		return false, &Error{Pos: i, Msg: msgAmbiguousDashes}
	}
	return false, nil
}

// scanNumber scans a numeric literal starting at src[i] (a digit, or a '.'
// followed by a digit): 123, 1.5, 1., .5, 1e10, 1.5E-3, 0x1f, 0b101. An
// identifier character directly after the literal is an error: servers
// disagree on 1abc (MySQL: identifier; PostgreSQL 15+, SQLite: error;
// older PostgreSQL: 1 AS abc).
func scanNumber(src string, i int) (int, *Error) {
	n := len(src)
	j := i
	if src[i] == '0' && i+2 < n && (src[i+1] == 'x' || src[i+1] == 'b') {
		k := i + 2
		if src[i+1] == 'x' {
			for k < n && charClass[src[k]]&ccHex != 0 {
				k++
			}
		} else {
			for k < n && (src[k] == '0' || src[k] == '1') {
				k++
			}
		}
		if k > i+2 {
			return numberEnd(src, k)
		}
	}
	if src[j] != '.' {
		for j < n && isDigit(src[j]) {
			j++
		}
		if j < n && src[j] == '.' && (j+1 >= n || src[j+1] != '.') {
			j++
		}
	} else {
		j++
	}
	for j < n && isDigit(src[j]) {
		j++
	}
	if j < n && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < n && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < n && isDigit(src[k]) {
			j = k
			for j < n && isDigit(src[j]) {
				j++
			}
		}
	}
	return numberEnd(src, j)
}

func numberEnd(src string, j int) (int, *Error) {
	if j < len(src) && isIdentCont(src[j]) {
		return j, &Error{Pos: j, Msg: msgNumberJunk}
	}
	return j, nil
}

// scanParamNumber scans the digits of $n or ?NNN starting at src[i].
func scanParamNumber(src string, i int) (end, num int, err *Error) {
	start := i - 1
	for i < len(src) && isDigit(src[i]) {
		if num <= maxParamNum {
			num = num*10 + int(src[i]-'0')
		}
		i++
	}
	if num < 1 || num > maxParamNum {
		return i, 0, &Error{Pos: start, Msg: msgParamRange}
	}
	end, err = numberEnd(src, i)
	return end, num, err
}

// lexDollar lexes a token starting with '$': a $n placeholder, a dollar
// quoted string, or an SQLite $name placeholder.
func lexDollar(src string, i int, syn *Syntax) (Kind, int, int, *Error) {
	n := len(src)
	start := i
	if syn.DollarParams && i+1 < n && isDigit(src[i+1]) {
		end, num, err := scanParamNumber(src, i+1)
		return KindParam, end, num, err
	}
	if syn.DollarQuotes {
		j := i + 1
		if j < n && charClass[src[j]]&ccIdentStart != 0 {
			j++
			for j < n && charClass[src[j]]&(ccIdentStart|ccDigit) != 0 {
				j++
			}
		}
		if j < n && src[j] == '$' {
			delim := src[start : j+1]
			k := strings.Index(src[j+1:], delim)
			if k < 0 {
				return KindString, n, 0, &Error{Pos: start, Msg: msgDollarString}
			}
			return KindString, j + 1 + k + len(delim), 0, nil
		}
	}
	if syn.NamedParams {
		end, err := scanNamedParam(src, i)
		return KindParam, end, 0, err
	}
	// PostgreSQL: a lone $ or $name is a syntax error. MySQL: $ as the first
	// character of an identifier is deprecated, and MySQL 9 uses $$ and
	// $tag$ quoting in some statements: refuse rather than guess.
	return KindPunct, i + 1, 0, &Error{Pos: start, Msg: msgDollar}
}

// scanNamedParam scans an SQLite :name, @name, $name or #name placeholder
// at src[i], following sqlite3GetToken: identifier characters and "::"
// pairs. The Tcl array form $a(x) is rejected.
func scanNamedParam(src string, i int) (int, *Error) {
	n := len(src)
	start := i
	names := 0
	for i++; i < n; {
		c := src[i]
		switch {
		case isIdentCont(c):
			names++
			i++
			continue
		case c == '(' && names > 0:
			return i, &Error{Pos: start, Msg: msgNamedParam}
		case c == ':' && i+1 < n && src[i+1] == ':':
			i += 2
			continue
		}
		break
	}
	if names == 0 {
		return i, &Error{Pos: start, Msg: msgNamedParam}
	}
	return i, nil
}
