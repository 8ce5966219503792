package sqllex

import (
	"strconv"
	"strings"
	"unicode"
)

// Syntax selects the lexical rules of one SQL dialect. The zero value is a
// plain ANSI-ish dialect: '...' strings with doubled quotes, "..." quoted
// identifiers, -- and /* */ comments, no placeholders.
//
// Use the predefined [Postgres], [MySQL] and [SQLite] values; a hand-built
// Syntax is only as exact as the combination of flags it sets.
type Syntax struct {
	// BackslashEscapes: a backslash escapes the next byte inside '...' (and,
	// with DoubleQuoteStrings, "...") string literals: 'it\'s'. MySQL
	// without NO_BACKSLASH_ESCAPES.
	BackslashEscapes bool
	// DoubleQuoteStrings: "..." is a string literal (MySQL without
	// ANSI_QUOTES); otherwise "..." is a quoted identifier.
	DoubleQuoteStrings bool
	// Backticks: `quoted identifier` with `` doubling (MySQL, SQLite).
	Backticks bool
	// Brackets: [quoted identifier], no escape inside (SQLite).
	Brackets bool
	// BracketDoubling: with Brackets, ]] inside [...] stands for one ] and does
	// not end the name (MariaDB under sql_mode=MSSQL: [a]]b] is a]b).
	BracketDoubling bool
	// DollarQuotes: $$...$$ and $tag$...$tag$ strings (PostgreSQL).
	DollarQuotes bool
	// EStrings: E'...' strings with backslash escapes, including PostgreSQL's
	// continuation of a literal over a newline with the first part's rules
	// (E'a'<newline>'b\'c' is one literal), and the U&'...' / U&"..."
	// Unicode-escape forms (PostgreSQL).
	EStrings bool
	// HashComments: # starts a comment to end of line (MySQL).
	HashComments bool
	// NestedComments: /* /* nested */ still comment */ (PostgreSQL).
	NestedComments bool
	// ExecComments: /*! ... */, /*M! ... */ and /*+ ... */ are reported as
	// KindExecComment because the server may execute their content
	// (MySQL, MariaDB).
	ExecComments bool
	// DollarParams: $1, $2, ... positional placeholders (PostgreSQL).
	DollarParams bool
	// QuestionParams: ? placeholders (MySQL, SQLite). A ? immediately
	// followed by an identifier character is rejected (MySQL does not treat
	// it as a placeholder) unless NamedParams allows ?NNN.
	QuestionParams bool
	// NamedParams: SQLite's ?NNN, :name, @name, $name and #name
	// placeholders (including the name::suffix form). A name followed by
	// "(" (SQLite's Tcl array form) is rejected.
	NamedParams bool
	// DashCommentNeedsSpace: -- starts a comment only when followed by
	// whitespace, a control character or the end of input (MySQL); a--1 is
	// a minus minus one.
	DashCommentNeedsSpace bool
	// CRLineEnd: a carriage return also ends a -- comment (PostgreSQL).
	// MySQL and SQLite end line comments at \n only.
	CRLineEnd bool
}

var (
	// Postgres is PostgreSQL with standard_conforming_strings=on.
	Postgres = Syntax{
		DollarQuotes:   true,
		EStrings:       true,
		NestedComments: true,
		DollarParams:   true,
		CRLineEnd:      true,
	}
	// MySQL is MySQL/MariaDB in the default sql_mode (no ANSI_QUOTES, no
	// NO_BACKSLASH_ESCAPES) over an ASCII-compatible connection character
	// set such as utf8mb4.
	MySQL = Syntax{
		BackslashEscapes:      true,
		DoubleQuoteStrings:    true,
		Backticks:             true,
		HashComments:          true,
		ExecComments:          true,
		QuestionParams:        true,
		DashCommentNeedsSpace: true,
	}
	// SQLite is SQLite 3.
	SQLite = Syntax{
		Backticks:      true,
		Brackets:       true,
		QuestionParams: true,
		NamedParams:    true,
	}
)

// Kind classifies a token.
type Kind uint8

const (
	// KindSpace is a run of ASCII whitespace (space, \t, \n, \r, \f, \v).
	KindSpace Kind = iota
	// KindComment is a -- comment (to end of line, newline excluded), a
	// /* */ comment, or a # comment with HashComments.
	KindComment
	// KindExecComment is a MySQL/MariaDB /*! */, /*M! */ or /*+ */
	// comment whose content the server may execute. It is significant.
	KindExecComment
	// KindWord is a bare identifier or keyword.
	KindWord
	// KindQuotedIdent is "x" (unless DoubleQuoteStrings), `x`, [x] or
	// PostgreSQL U&"x".
	KindQuotedIdent
	// KindString is a string literal: '...', E'...', N'...', X'...', B'...',
	// U&'...', $$...$$, $tag$...$tag$, or "..." with DoubleQuoteStrings.
	KindString
	// KindNumber is a numeric literal: 123, 1.5, .5e-3, 0x1f, 0b101.
	KindNumber
	// KindParam is a placeholder: $n, ?, ?NNN, :name, @name, $name, #name.
	KindParam
	// KindPunct is an operator or punctuation, or any byte that fits no
	// other class (control bytes, stray bytes). ( ) , ; . = are always
	// tokens of their own, except that = is part of <= >= != == := => <=>.
	KindPunct
)

var kindNames = [...]string{
	KindSpace:       "Space",
	KindComment:     "Comment",
	KindExecComment: "ExecComment",
	KindWord:        "Word",
	KindQuotedIdent: "QuotedIdent",
	KindString:      "String",
	KindNumber:      "Number",
	KindParam:       "Param",
	KindPunct:       "Punct",
}

// String returns the name of the kind, e.g. "Word".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Token is one lexical token: src[Start:End].
type Token struct {
	Kind  Kind
	Start int // byte offset of the first byte in the source
	End   int // byte offset one past the last byte
	Num   int // for KindParam: the number of $n / ?NNN, 0 for ? and named ones
}

// Text returns the source text of the token.
func (t Token) Text(src string) string { return src[t.Start:t.End] }

// Error is a lexical error at a byte offset. Its message never quotes the
// SQL text, which may contain secrets or row data.
type Error struct {
	Pos int    // byte offset where the offending construct starts
	Msg string // fixed description, e.g. "unterminated string literal"
}

func (e *Error) Error() string {
	return "sqllex: " + e.Msg + " at byte offset " + strconv.Itoa(e.Pos)
}

// IsKeyword reports whether tok is a KindWord equal to kw, compared
// case-insensitively for ASCII letters only. kw must be given in upper case.
func IsKeyword(src string, tok Token, kw string) bool {
	if tok.Kind != KindWord || tok.End-tok.Start != len(kw) || tok.Start < 0 || tok.End > len(src) {
		return false
	}
	for i := 0; i < len(kw); i++ {
		c := src[tok.Start+i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != kw[i] {
			return false
		}
	}
	return true
}

// Ident returns the identifier that a KindWord or KindQuotedIdent token
// names. Bare words are returned as written (the caller decides on case
// folding); quoted ones are unquoted with doubled quote characters
// collapsed, and quoted is true. ok is false for other kinds, for an empty
// quoted identifier, and for PostgreSQL U&"..." identifiers (whose escapes
// this package does not decode).
func Ident(src string, tok Token) (name string, quoted bool, ok bool) {
	if tok.Start < 0 || tok.End > len(src) || tok.Start >= tok.End {
		return "", false, false
	}
	text := src[tok.Start:tok.End]
	switch tok.Kind {
	case KindWord:
		return text, false, true
	case KindQuotedIdent:
		if len(text) < 3 {
			return "", true, false
		}
		open, last := text[0], text[len(text)-1]
		body := text[1 : len(text)-1]
		switch {
		case open == '[' && last == ']':
			// ]] can only be inside with BracketDoubling: one ].
			return collapseDoubled(body, ']'), true, true
		case (open == '"' || open == '`') && last == open:
			return collapseDoubled(body, open), true, true
		}
		return "", true, false
	}
	return "", false, false
}

// collapseDoubled replaces each doubled q in s by a single q.
func collapseDoubled(s string, q byte) string {
	if strings.IndexByte(s, q) < 0 {
		return s
	}
	b := make([]byte, 0, len(s)-1)
	for j := 0; j < len(s); j++ {
		b = append(b, s[j])
		if s[j] == q && j+1 < len(s) && s[j+1] == q {
			j++
		}
	}
	return string(b)
}

// Significant returns the tokens that are neither KindSpace nor
// KindComment, in order, in a newly allocated slice. KindExecComment
// tokens are kept.
func Significant(toks []Token) []Token {
	n := 0
	for _, t := range toks {
		if t.Kind != KindSpace && t.Kind != KindComment {
			n++
		}
	}
	out := make([]Token, 0, n)
	for _, t := range toks {
		if t.Kind != KindSpace && t.Kind != KindComment {
			out = append(out, t)
		}
	}
	return out
}

// SameName reports whether the column names a and b, each as the server reads it
// (decoded from its quoting; on PostgreSQL an unquoted name already folded and
// truncated), name one column in syn's server:
//
//   - PostgreSQL: only the same bytes ("Version" is not version).
//   - SQLite: ASCII letters compared without case, no other character.
//   - MySQL/MariaDB: every character compared by its lower-case form, as the server
//     compares column names (the system character set utf8mb3 lowered character by
//     character): É is é, U+212A K is k, U+0130 İ is i, but U+017F ſ is not s and σ
//     is not ς, which strings.EqualFold would equate.
//
// It is the one answer to "same column?" for names from statement text, from the
// configuration and from server errors.
func SameName(syn Syntax, a, b string) bool {
	switch syn {
	case Postgres:
		return a == b
	case SQLite:
		return len(a) == len(b) && LowerASCII(a) == LowerASCII(b)
	}
	ra, rb := []rune(a), []rune(b)
	if len(ra) != len(rb) {
		return false
	}
	for i := range ra {
		if ra[i] != rb[i] && unicode.ToLower(ra[i]) != unicode.ToLower(rb[i]) {
			return false
		}
	}
	return true
}

// LowerASCII returns s with its ASCII letters in lower case and every other byte as it
// is (byte offsets unchanged): how SQLite, MySQL/MariaDB and PostgreSQL's unquoted
// identifiers fold names (no other character folds: U+017F ſ is not s).
func LowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
