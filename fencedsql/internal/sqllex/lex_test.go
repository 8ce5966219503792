package sqllex

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// tk is an expected token: kind and exact text.
type tk struct {
	k    Kind
	text string
}

func (t tk) String() string { return fmt.Sprintf("%v(%q)", t.k, t.text) }

// Shorthands for expected tokens.
func w(s string) tk  { return tk{KindWord, s} }
func qi(s string) tk { return tk{KindQuotedIdent, s} }
func s_(s string) tk { return tk{KindString, s} }
func nm(s string) tk { return tk{KindNumber, s} }
func pm(s string) tk { return tk{KindParam, s} }
func p(s string) tk  { return tk{KindPunct, s} }
func cm(s string) tk { return tk{KindComment, s} }
func ex(s string) tk { return tk{KindExecComment, s} }

var dialects = []struct {
	name string
	syn  Syntax
}{
	{"pg", Postgres},
	{"mysql", MySQL},
	{"sqlite", SQLite},
}

type lexCase struct {
	src  string
	want []tk // every token except KindSpace
}

// runCases checks each case: exact coverage, no error, and the non-space
// tokens with their kinds and texts.
func runCases(t *testing.T, syn Syntax, cases []lexCase) {
	t.Helper()
	for _, c := range cases {
		toks, err := Lex(c.src, syn)
		if err != nil {
			t.Errorf("Lex(%q): unexpected error %v", c.src, err)
			continue
		}
		if msg := checkTokens(c.src, toks, syn); msg != "" {
			t.Errorf("Lex(%q): %s", c.src, msg)
		}
		var got []tk
		for _, tok := range toks {
			if tok.Kind != KindSpace {
				got = append(got, tk{tok.Kind, tok.Text(c.src)})
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Lex(%q):\n got  %v\n want %v", c.src, got, c.want)
		}
	}
}

type errCase struct {
	src string
	pos int
	msg string // substring of Error.Msg
}

func runErrCases(t *testing.T, syn Syntax, cases []errCase) {
	t.Helper()
	for _, c := range cases {
		toks, err := Lex(c.src, syn)
		if err == nil {
			var got []tk
			for _, tok := range toks {
				got = append(got, tk{tok.Kind, tok.Text(c.src)})
			}
			t.Errorf("Lex(%q): want error %q, got tokens %v", c.src, c.msg, got)
			continue
		}
		if toks != nil {
			t.Errorf("Lex(%q): tokens returned with error", c.src)
		}
		var le *Error
		if !errors.As(err, &le) {
			t.Errorf("Lex(%q): error %T is not *Error", c.src, err)
			continue
		}
		if le.Pos != c.pos || !strings.Contains(le.Msg, c.msg) {
			t.Errorf("Lex(%q): got error %q at %d, want %q at %d", c.src, le.Msg, le.Pos, c.msg, c.pos)
		}
	}
}

func TestStringsAllDialects(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			runCases(t, d.syn, []lexCase{
				{`'abc'`, []tk{s_(`'abc'`)}},
				{`''`, []tk{s_(`''`)}},
				{`'it''s'`, []tk{s_(`'it''s'`)}},
				{`''''`, []tk{s_(`''''`)}},
				{`'a''b''c' x`, []tk{s_(`'a''b''c'`), w("x")}},
				{`'a' 'b'`, []tk{s_(`'a'`), s_(`'b'`)}},
				{`'--not a comment' x`, []tk{s_(`'--not a comment'`), w("x")}},
				{`'/* no */' x`, []tk{s_(`'/* no */'`), w("x")}},
				{`'update t set x=1; '`, []tk{s_(`'update t set x=1; '`)}},
				{`N'x' n'y'`, []tk{s_(`N'x'`), s_(`n'y'`)}},
				{`X'1F' x'ab' B'01' b'1'`, []tk{s_(`X'1F'`), s_(`x'ab'`), s_(`B'01'`), s_(`b'1'`)}},
				// A longer word before a quote is a word, then a string.
				{`xy'1'`, []tk{w("xy"), s_(`'1'`)}},
				{`_utf8mb4'x'`, []tk{w("_utf8mb4"), s_(`'x'`)}},
				{`'héllo wörld'`, []tk{s_(`'héllo wörld'`)}},
				{"'a\nb'", []tk{s_("'a\nb'")}},
			})
			runErrCases(t, d.syn, []errCase{
				{`'abc`, 0, "unterminated string"},
				{`x = 'it''`, 4, "unterminated string"},
				{`'`, 0, "unterminated string"},
				{`N'abc`, 1, "unterminated string"},
				{`X'`, 1, "unterminated string"},
				{`SELECT 'a' || 'b`, 14, "unterminated string"},
			})
		})
	}
}

func TestBackslashEscapes(t *testing.T) {
	// MySQL: backslash escapes in '...' and "..." strings.
	runCases(t, MySQL, []lexCase{
		{`'a\'b'`, []tk{s_(`'a\'b'`)}},
		{`'a\\'`, []tk{s_(`'a\\'`)}},
		{`'a\\' x`, []tk{s_(`'a\\'`), w("x")}},
		{`'\\\''`, []tk{s_(`'\\\''`)}},
		{`'a\'' x`, []tk{s_(`'a\''`), w("x")}},
		{`"a\"b" x`, []tk{s_(`"a\"b"`), w("x")}},
		{`"it""s"`, []tk{s_(`"it""s"`)}},
		{`N'a\'b'`, []tk{s_(`N'a\'b'`)}},
		// The classic injection shape: the quote is escaped, the string
		// goes on, nothing after it is code.
		{`'\' OR 1=1 -- '`, []tk{s_(`'\' OR 1=1 -- '`)}},
		{`'\n\t\0'`, []tk{s_(`'\n\t\0'`)}},
		{`'é\'é'`, []tk{s_(`'é\'é'`)}},
	})
	runErrCases(t, MySQL, []errCase{
		{`'a\'`, 0, "unterminated string"},
		{`'a\`, 0, "unterminated string"},
		{`x = "a\"`, 4, "unterminated string"},
	})
	// Without BackslashEscapes (PostgreSQL standard strings, SQLite) a
	// backslash is an ordinary character.
	for _, syn := range []Syntax{Postgres, SQLite} {
		runCases(t, syn, []lexCase{
			{`'a\' x`, []tk{s_(`'a\'`), w("x")}},
			{`'a\\' x`, []tk{s_(`'a\\'`), w("x")}},
			{`'\' OR 1=1 -- '`, []tk{s_(`'\'`), w("OR"), nm("1"), p("="), nm("1"), cm("-- '")}},
		})
	}
	// MySQL with NO_BACKSLASH_ESCAPES.
	noBS := MySQL
	noBS.BackslashEscapes = false
	runCases(t, noBS, []lexCase{
		{`'a\' x`, []tk{s_(`'a\'`), w("x")}},
	})
	// X'..' and B'..' never take escapes and end at the first quote (no
	// doubling) in all three servers; what follows is a new literal.
	runCases(t, MySQL, []lexCase{
		{`X'\' x`, []tk{s_(`X'\'`), w("x")}},
		{`X'41''\' OR 1=1 -- '`, []tk{s_(`X'41'`), s_(`'\' OR 1=1 -- '`)}},
		{`b'01''\'' x`, []tk{s_(`b'01'`), s_(`'\''`), w("x")}},
	})
	for _, d := range dialects {
		runCases(t, d.syn, []lexCase{
			{`X''''`, []tk{s_(`X''`), s_(`''`)}},
			{`x'ab''cd'`, []tk{s_(`x'ab'`), s_(`'cd'`)}},
		})
	}
}

func TestPostgresEStrings(t *testing.T) {
	runCases(t, Postgres, []lexCase{
		{`E'a\'b'`, []tk{s_(`E'a\'b'`)}},
		{`e'a\'b'`, []tk{s_(`e'a\'b'`)}},
		{`E'\\' x`, []tk{s_(`E'\\'`), w("x")}},
		{`E'it''s'`, []tk{s_(`E'it''s'`)}},
		{`E'\' OR 1=1 -- '`, []tk{s_(`E'\' OR 1=1 -- '`)}},
		{`x = E'\x41'`, []tk{w("x"), p("="), s_(`E'\x41'`)}},
		// Only a one-letter word E/e prefixes: stre'x' is the word stre
		// followed by a standard string, in which \ is ordinary.
		{`stre'\' x`, []tk{w("stre"), s_(`'\'`), w("x")}},
		{`ee'\' x`, []tk{w("ee"), s_(`'\'`), w("x")}},
		{`_e'\' x`, []tk{w("_e"), s_(`'\'`), w("x")}},
		{`e1'\' x`, []tk{w("e1"), s_(`'\'`), w("x")}},
		{`(E'\'')`, []tk{p("("), s_(`E'\''`), p(")")}},
		{`t.E'\''`, []tk{w("t"), p("."), s_(`E'\''`)}},
		// Word then space: not a prefix.
		{`E '\' x`, []tk{w("E"), s_(`'\'`), w("x")}},
		// U& strings and identifiers: no backslash escapes in the lexer.
		{`U&'\0041' x`, []tk{s_(`U&'\0041'`), w("x")}},
		{`u&'d\0061t\+000061'`, []tk{s_(`u&'d\0061t\+000061'`)}},
		{`U&"d\0061t"`, []tk{qi(`U&"d\0061t"`)}},
		{`U&'a' UESCAPE '!'`, []tk{s_(`U&'a'`), w("UESCAPE"), s_(`'!'`)}},
		{`au&'x'`, []tk{w("au"), p("&"), s_(`'x'`)}},
		{`U & 'x'`, []tk{w("U"), p("&"), s_(`'x'`)}},
		// Bit and hex strings have no escapes either.
		{`B'\' x`, []tk{s_(`B'\'`), w("x")}},
	})
	runErrCases(t, Postgres, []errCase{
		{`E'a\'`, 1, "unterminated string"},
		{`E'\`, 1, "unterminated string"},
		{`U&"abc`, 2, "unterminated quoted identifier"},
	})
	// E is an ordinary word in MySQL and SQLite.
	for _, syn := range []Syntax{MySQL, SQLite} {
		runCases(t, syn, []lexCase{
			{`E'x'`, []tk{w("E"), s_(`'x'`)}},
			{`U&'x'`, []tk{w("U"), p("&"), s_(`'x'`)}},
		})
	}
}

func TestPostgresStringContinuation(t *testing.T) {
	// A literal continued over a newline keeps the E'' rules.
	runCases(t, Postgres, []lexCase{
		{"E'a'\n'\\' OR 1=1 --'", []tk{s_("E'a'"), s_("'\\' OR 1=1 --'")}},
		{"E'a' \t\n \n'b\\'c'", []tk{s_("E'a'"), s_("'b\\'c'")}},
		{"E'a'\r'b\\'c'", []tk{s_("E'a'"), s_("'b\\'c'")}},
		{"E'a' -- c\n'b\\'c'", []tk{s_("E'a'"), cm("-- c"), s_("'b\\'c'")}},
		{"E'a'\n-- c\n'b\\'c'", []tk{s_("E'a'"), cm("-- c"), s_("'b\\'c'")}},
		{"E'a'\n\v'b\\'c'", []tk{s_("E'a'"), s_("'b\\'c'")}},
		// Chains keep going.
		{"E'a'\n'b'\n'\\''", []tk{s_("E'a'"), s_("'b'"), s_("'\\''")}},
		// No newline: two separate literals, the second a standard one.
		{"E'a' '\\' x", []tk{s_("E'a'"), s_("'\\'"), w("x")}},
		// \v before the newline is not horizontal whitespace for the
		// continuation rule.
		{"E'a'\v\n'\\' x", []tk{s_("E'a'"), s_("'\\'"), w("x")}},
		// A block comment breaks the continuation.
		{"E'a'\n/**/'\\' x", []tk{s_("E'a'"), cm("/**/"), s_("'\\'"), w("x")}},
		// A -- comment after the newline must itself end with a newline.
		{"E'a'\n--c'\\'", []tk{s_("E'a'"), cm("--c'\\'")}},
		// Standard strings continue as standard strings.
		{"'a'\n'\\' x", []tk{s_("'a'"), s_("'\\'"), w("x")}},
		{"N'a'\n'\\' x", []tk{s_("N'a'"), s_("'\\'"), w("x")}},
		{"U&'a'\n'\\' x", []tk{s_("U&'a'"), s_("'\\'"), w("x")}},
		// Hex and bit strings continue raw: the first quote ends each part.
		{"X'ab'\n'c''d'", []tk{s_("X'ab'"), s_("'c'"), s_("'d'")}},
		{"B'01'\n'1'\n'0''x'", []tk{s_("B'01'"), s_("'1'"), s_("'0'"), s_("'x'")}},
		// A chain keeps the rules of its first literal only.
		{"X'ab'\n'c' E'\\''", []tk{s_("X'ab'"), s_("'c'"), s_("E'\\''")}},
		// Something else in between.
		{"E'a'\n,'\\' x", []tk{s_("E'a'"), p(","), s_("'\\'"), w("x")}},
	})
}

func TestDollarQuotes(t *testing.T) {
	runCases(t, Postgres, []lexCase{
		{`$$abc$$`, []tk{s_(`$$abc$$`)}},
		{`$$$$`, []tk{s_(`$$$$`)}},
		{`$$it's$$ x`, []tk{s_(`$$it's$$`), w("x")}},
		{`$fn$ a $$ b $fn$`, []tk{s_(`$fn$ a $$ b $fn$`)}},
		{`$a$$a$`, []tk{s_(`$a$$a$`)}},
		{`$_x1$ '$_x1$`, []tk{s_(`$_x1$ '$_x1$`)}},
		{`$tag$ -- */ ' " $TAG$ $tag$ x`, []tk{s_(`$tag$ -- */ ' " $TAG$ $tag$`), w("x")}},
		{`$ä$x$ä$`, []tk{s_(`$ä$x$ä$`)}},
		{`$$\$$ x`, []tk{s_(`$$\$$`), w("x")}},
		// $ inside a word belongs to the word.
		{`a$b`, []tk{w("a$b")}},
		{`a$$b$$`, []tk{w("a$$b$$")}},
		{`a$1`, []tk{w("a$1")}},
		{`x $$a$$y`, []tk{w("x"), s_(`$$a$$`), w("y")}},
		// Parameters are not quotes.
		{`$1`, []tk{pm("$1")}},
		{`$1,$2`, []tk{pm("$1"), p(","), pm("$2")}},
	})
	runErrCases(t, Postgres, []errCase{
		{`$$abc`, 0, "unterminated dollar-quoted string"},
		{`x $tag$ abc $TAG$`, 2, "unterminated dollar-quoted string"},
		{`$a$ $b$`, 0, "unterminated dollar-quoted string"},
		{`$`, 0, "unrecognized $"},
		{`$ x`, 0, "unrecognized $"},
		{`$abc x`, 0, "unrecognized $"},
		{`$1$`, 2, "identifier character directly after"},
		{`$-1`, 0, "unrecognized $"},
	})
}

func TestQuotedIdentifiers(t *testing.T) {
	for _, syn := range []Syntax{Postgres, SQLite} {
		runCases(t, syn, []lexCase{
			{`"abc"`, []tk{qi(`"abc"`)}},
			{`"quoted ""ident"""`, []tk{qi(`"quoted ""ident"""`)}},
			{`"a\" x`, []tk{qi(`"a\"`), w("x")}},
			{`"update"."set"`, []tk{qi(`"update"`), p("."), qi(`"set"`)}},
			{`"it's"`, []tk{qi(`"it's"`)}},
			{`"--" x`, []tk{qi(`"--"`), w("x")}},
		})
		runErrCases(t, syn, []errCase{
			{`"abc`, 0, "unterminated quoted identifier"},
			{`x."a""`, 2, "unterminated quoted identifier"},
		})
	}
	for _, syn := range []Syntax{MySQL, SQLite} {
		runCases(t, syn, []lexCase{
			{"`abc`", []tk{qi("`abc`")}},
			{"`back``tick`", []tk{qi("`back``tick`")}},
			{"`a\\` x", []tk{qi("`a\\`"), w("x")}},
			{"`it's` `\"`", []tk{qi("`it's`"), qi("`\"`")}},
		})
		runErrCases(t, syn, []errCase{
			{"`abc", 0, "unterminated quoted identifier"},
			{"x `a``", 2, "unterminated quoted identifier"},
		})
	}
	runCases(t, SQLite, []lexCase{
		{`[abc]`, []tk{qi(`[abc]`)}},
		{`[a b]]`, []tk{qi(`[a b]`), p("]")}},
		{`[it's "x"]`, []tk{qi(`[it's "x"]`)}},
		{`[a[b]`, []tk{qi(`[a[b]`)}},
	})
	runErrCases(t, SQLite, []errCase{
		{`[abc`, 0, "unterminated quoted identifier"},
	})
	// Brackets are punctuation elsewhere, backticks in PostgreSQL too.
	runCases(t, Postgres, []lexCase{
		{`a[1]`, []tk{w("a"), p("["), nm("1"), p("]")}},
		{"`x`", []tk{p("`"), w("x"), p("`")}},
	})
	runCases(t, MySQL, []lexCase{
		{`[x]`, []tk{p("["), w("x"), p("]")}},
	})
	// MariaDB under sql_mode=MSSQL: ]] inside brackets is one ] (red-team rt51e F2).
	mssql := MySQL
	mssql.DoubleQuoteStrings, mssql.Brackets, mssql.BracketDoubling = false, true, true
	runCases(t, mssql, []lexCase{
		{`[a]]b]`, []tk{qi(`[a]]b]`)}},
		{`[x'] [#] [-- ]`, []tk{qi(`[x']`), qi(`[#]`), qi(`[-- ]`)}},
		{`[a]]]`, []tk{qi(`[a]]]`)}},
	})
	runErrCases(t, mssql, []errCase{
		{`[a]]`, 0, "unterminated quoted identifier"},
	})
	if n, _, _ := Ident(`[a]]b]`, Token{Kind: KindQuotedIdent, End: 6}); n != "a]b" {
		t.Errorf("Ident([a]]b]) = %q, want a]b", n)
	}
}

func TestComments(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			runCases(t, d.syn, []lexCase{
				{"-- hello\nx", []tk{cm("-- hello"), w("x")}},
				{"x -- ' \" `\ny", []tk{w("x"), cm("-- ' \" `"), w("y")}},
				{"x --", []tk{w("x"), cm("--")}},
				{"x -- ", []tk{w("x"), cm("-- ")}},
				{"x --\n", []tk{w("x"), cm("--")}},
				{"x --\ty", []tk{w("x"), cm("--\ty")}},
				{"/* c */x", []tk{cm("/* c */"), w("x")}},
				{"/**/x", []tk{cm("/**/"), w("x")}},
				{"/***/x", []tk{cm("/***/"), w("x")}},
				{"/* ' */ x", []tk{cm("/* ' */"), w("x")}},
				{"/* -- */ x", []tk{cm("/* -- */"), w("x")}},
				{"/*\nmulti\nline\n*/ x", []tk{cm("/*\nmulti\nline\n*/"), w("x")}},
				{"a/*c*/b", []tk{w("a"), cm("/*c*/"), w("b")}},
				{"1/2", []tk{nm("1"), p("/"), nm("2")}},
				{"a*/b", []tk{w("a"), p("*"), p("/"), w("b")}},
				// Operators stop before comment starts.
				{"a+/*c*/b", []tk{w("a"), p("+"), cm("/*c*/"), w("b")}},
				{"a||/*c*/b", []tk{w("a"), p("||"), cm("/*c*/"), w("b")}},
				{"a<-- c\nb", []tk{w("a"), p("<"), cm("-- c"), w("b")}},
				{"a->-- c\nb", []tk{w("a"), p("->"), cm("-- c"), w("b")}},
				{"a = -- c\n1", []tk{w("a"), p("="), cm("-- c"), nm("1")}},
			})
			runErrCases(t, d.syn, []errCase{
				{"/* abc", 0, "unterminated block comment"},
				{"x /*/", 2, "unterminated block comment"},
				{"x /* a *", 2, "unterminated block comment"},
				{"/*", 0, "unterminated block comment"},
			})
		})
	}
	// Comment line ends: PostgreSQL also ends at \r; MySQL and SQLite do not.
	runCases(t, Postgres, []lexCase{
		{"-- a\rb", []tk{cm("-- a"), w("b")}},
		{"-- a\r\nb", []tk{cm("-- a"), w("b")}},
	})
	for _, syn := range []Syntax{MySQL, SQLite} {
		runCases(t, syn, []lexCase{
			{"-- a\rb\nc", []tk{cm("-- a\rb"), w("c")}},
			{"-- a\r\nb", []tk{cm("-- a\r"), w("b")}},
		})
	}
	// Nested comments in PostgreSQL only.
	runCases(t, Postgres, []lexCase{
		{"/* /* nested */ still comment */ x", []tk{cm("/* /* nested */ still comment */"), w("x")}},
		{"/*/**/*/x", []tk{cm("/*/**/*/"), w("x")}},
		{"/* a /* b /* c */ */ */x", []tk{cm("/* a /* b /* c */ */ */"), w("x")}},
		{"/*/ x */y", []tk{cm("/*/ x */"), w("y")}},
		{"/* **/x", []tk{cm("/* **/"), w("x")}},
	})
	runErrCases(t, Postgres, []errCase{
		{"/* /* */ x", 0, "unterminated block comment"},
		{"/*/**/", 0, "unterminated block comment"},
	})
	for _, syn := range []Syntax{MySQL, SQLite} {
		runCases(t, syn, []lexCase{
			{"/* /* nested */ x", []tk{cm("/* /* nested */"), w("x")}},
			{"/* /* */ */", []tk{cm("/* /* */"), p("*"), p("/")}},
		})
	}
	// # comments in MySQL; an operator in PostgreSQL; a parameter prefix
	// in SQLite.
	runCases(t, MySQL, []lexCase{
		{"# hi ' \nx", []tk{cm("# hi ' "), w("x")}},
		{"x#y\nz", []tk{w("x"), cm("#y"), w("z")}},
		{"x #", []tk{w("x"), cm("#")}},
	})
	runCases(t, Postgres, []lexCase{
		{"a # b", []tk{w("a"), p("#"), w("b")}},
		{"j #> '{a}'", []tk{w("j"), p("#>"), s_("'{a}'")}},
		{"j #>> '{a}'", []tk{w("j"), p("#>>"), s_("'{a}'")}},
		{"j #- '{a}'", []tk{w("j"), p("#"), p("-"), s_("'{a}'")}},
		{"j #-- c", []tk{w("j"), p("#"), cm("-- c")}},
	})
	runCases(t, SQLite, []lexCase{
		{"#a", []tk{pm("#a")}},
	})
}

func TestMySQLDashComment(t *testing.T) {
	runCases(t, MySQL, []lexCase{
		{"a--1", []tk{w("a"), p("-"), p("-"), nm("1")}},
		{"a --1", []tk{w("a"), p("-"), p("-"), nm("1")}},
		{"a---1", []tk{w("a"), p("-"), p("-"), p("-"), nm("1")}},
		{"a--x", []tk{w("a"), p("-"), p("-"), w("x")}},
		{"a-- 1", []tk{w("a"), cm("-- 1")}},
		{"a--\t1", []tk{w("a"), cm("--\t1")}},
		{"a--\n1", []tk{w("a"), cm("--"), nm("1")}},
		{"a--\r1\n2", []tk{w("a"), cm("--\r1"), nm("2")}},
		{"a--\x011", []tk{w("a"), cm("--\x011")}},
		{"a--\x7f1", []tk{w("a"), cm("--\x7f1")}},
		{"a--", []tk{w("a"), cm("--")}},
		{"a---- x", []tk{w("a"), p("-"), p("-"), cm("-- x")}},
		{"'--x'", []tk{s_("'--x'")}},
	})
	runErrCases(t, MySQL, []errCase{
		{"a--\u00a01", 1, "ambiguous --"},
	})
	// PostgreSQL and SQLite: -- always starts a comment.
	for _, syn := range []Syntax{Postgres, SQLite} {
		runCases(t, syn, []lexCase{
			{"a--1", []tk{w("a"), cm("--1")}},
			{"a--x\nb", []tk{w("a"), cm("--x"), w("b")}},
			{"a--\u00a01", []tk{w("a"), cm("--\u00a01")}},
		})
	}
}

func TestMySQLExecComments(t *testing.T) {
	runCases(t, MySQL, []lexCase{
		{"/*! STRAIGHT_JOIN */ x", []tk{ex("/*! STRAIGHT_JOIN */"), w("x")}},
		{"/*!50110 KEY_BLOCK_SIZE=1024 */", []tk{ex("/*!50110 KEY_BLOCK_SIZE=1024 */")}},
		{"/*M!100301 x */", []tk{ex("/*M!100301 x */")}},
		{"UPDATE /*+ NO_RANGE_OPTIMIZATION(t3 PRIMARY) */ t3", []tk{w("UPDATE"), ex("/*+ NO_RANGE_OPTIMIZATION(t3 PRIMARY) */"), w("t3")}},
		{"/*+ BKA(@`qb1` t1) */", []tk{ex("/*+ BKA(@`qb1` t1) */")}},
		{"/*+ SET_VAR(optimizer_switch = 'mrr=off') */", []tk{ex("/*+ SET_VAR(optimizer_switch = 'mrr=off') */")}},
		{"/*!*/x", []tk{ex("/*!*/"), w("x")}},
		{"/*!40101 SET x = 'it''s' */", []tk{ex("/*!40101 SET x = 'it''s' */")}},
		{"/*!40101 SET x = 'a\\'b' */", []tk{ex("/*!40101 SET x = 'a\\'b' */")}},
		{"/*! a # c\n b */", []tk{ex("/*! a # c\n b */")}},
		{"/*! a -- c\n b */", []tk{ex("/*! a -- c\n b */")}},
		// Only /*!, /*M! and /*+ are executable; others are comments.
		{"/* ! x */", []tk{cm("/* ! x */")}},
		{"/*m! x */", []tk{cm("/*m! x */")}},
		{"/*M x */", []tk{cm("/*M x */")}},
		{"/*- x */", []tk{cm("/*- x */")}},
		{"'/*! x */'", []tk{s_("'/*! x */'")}},
	})
	runErrCases(t, MySQL, []errCase{
		{"/*! abc", 0, "unterminated executable comment"},
		{"x /*+ abc *", 2, "unterminated executable comment"},
		// A */ inside a string: executed, the string hides it; skipped, it
		// ends the comment. Refuse.
		{"/*!50000 x='*/' */", 0, "ambiguous executable comment"},
		{"/*+ SET_VAR(a='*/') */ DELETE", 0, "ambiguous executable comment"},
		{"/*!99999 `*/` */", 0, "ambiguous executable comment"},
		{"/*! \"*/\" */", 0, "ambiguous executable comment"},
		{"/*! x # */\n */", 0, "ambiguous executable comment"},
		{"/*! x -- */\n */", 0, "ambiguous executable comment"},
		{"/*! a /* b */ c */", 0, "ambiguous executable comment"},
		{"/*!50000 'a\\'*/'", 0, "ambiguous executable comment"},
		{"/*! 'abc */", 0, "ambiguous executable comment"},
		// A quote inside a # or -- comment in the body is not a quote, and
		// the string after the comment hides the first */.
		{"/*! #'\n'*/' */", 0, "ambiguous executable comment"},
		{"/*! -- '\n'*/' */", 0, "ambiguous executable comment"},
		{"/*! --\xa0 */", 0, "ambiguous executable comment"},
		// X'..' and B'..' end at the first quote, a plain string at the
		// unescaped one: where the readings differ, refuse (the letter may
		// follow a version number or a parameter sigil).
		{"/*!B'\\''*/", 0, "ambiguous executable comment"},
		{"/*!50110x'\\'' */", 0, "ambiguous executable comment"},
		{"/*! @b'\\'' */", 0, "ambiguous executable comment"},
	})
	runCases(t, MySQL, []lexCase{
		// Comments and literals that close before the first */ are fine.
		{"/*! # it's\n x */", []tk{ex("/*! # it's\n x */")}},
		{"/*! B'01' X'1f' ab'x' */", []tk{ex("/*! B'01' X'1f' ab'x' */")}},
		{"/*! -- it's\n x */", []tk{ex("/*! -- it's\n x */")}},
		{"/*! a --*/", []tk{ex("/*! a --*/")}},
		{"/*! a--'b' */", []tk{ex("/*! a--'b' */")}},
		{"/*+ a */ '*/'", []tk{ex("/*+ a */"), s_("'*/'")}},
	})
	runErrCases(t, MySQL, []errCase{
		// a--'b*/' : -- is not a comment in MySQL, so the quote is code.
		{"/*! a--'b*/' */", 0, "ambiguous executable comment"},
	})
	// Hand-built syntaxes: the body rules follow the flags.
	custom := Syntax{ExecComments: true, Brackets: true, DollarQuotes: true, Backticks: true}
	runCases(t, custom, []lexCase{
		{"/*! [a] `b` 'c' \"d\" -- e\n */", []tk{ex("/*! [a] `b` 'c' \"d\" -- e\n */")}},
	})
	runErrCases(t, custom, []errCase{
		{"/*! [a*/] */", 0, "ambiguous executable comment"},
		{"/*! [a */", 0, "ambiguous executable comment"},
		{"/*! $$ */", 0, "ambiguous executable comment"},
		{"/*! -- */\n */", 0, "ambiguous executable comment"},
	})
	pgExec := Postgres
	pgExec.ExecComments = true
	runErrCases(t, pgExec, []errCase{
		{"/*! 'a' */", 0, "ambiguous executable comment"},
	})
	// Without ExecComments these are ordinary comments.
	for _, syn := range []Syntax{Postgres, SQLite} {
		runCases(t, syn, []lexCase{
			{"/*! x */", []tk{cm("/*! x */")}},
			{"/*+ x */", []tk{cm("/*+ x */")}},
			{"/*!50000 x='*/' */'", []tk{cm("/*!50000 x='*/"), s_("' */'")}},
		})
	}
}

func TestNumbers(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			runCases(t, d.syn, []lexCase{
				{"1", []tk{nm("1")}},
				{"123", []tk{nm("123")}},
				{"1.5", []tk{nm("1.5")}},
				{"1.", []tk{nm("1.")}},
				{".5", []tk{nm(".5")}},
				{".5e-3", []tk{nm(".5e-3")}},
				{"1e10", []tk{nm("1e10")}},
				{"1E+10", []tk{nm("1E+10")}},
				{"1.5E-3", []tk{nm("1.5E-3")}},
				{"1.e5", []tk{nm("1.e5")}},
				{"0x1f", []tk{nm("0x1f")}},
				{"0x1F", []tk{nm("0x1F")}},
				{"0b101", []tk{nm("0b101")}},
				{"0", []tk{nm("0")}},
				{"007", []tk{nm("007")}},
				{"1+2", []tk{nm("1"), p("+"), nm("2")}},
				{"1-2", []tk{nm("1"), p("-"), nm("2")}},
				{"-1", []tk{p("-"), nm("1")}},
				{"1..2", []tk{nm("1"), p("."), nm(".2")}},
				{"1.5.5", []tk{nm("1.5"), nm(".5")}},
				// t.col is word, '.', word; t.5 is word, '.', number.
				{"t.col", []tk{w("t"), p("."), w("col")}},
				{"t.5", []tk{w("t"), p("."), nm("5")}},
				{"t.1e5", []tk{w("t"), p("."), nm("1e5")}},
				{"t . 5", []tk{w("t"), p("."), nm("5")}},
				{"t .5", []tk{w("t"), nm(".5")}},
				{"(.5)", []tk{p("("), nm(".5"), p(")")}},
				{"x=.5", []tk{w("x"), p("="), nm(".5")}},
				{"1'a'", []tk{nm("1"), s_("'a'")}},
				{"1/*c*/", []tk{nm("1"), cm("/*c*/")}},
				{"1,2", []tk{nm("1"), p(","), nm("2")}},
				{"1)", []tk{nm("1"), p(")")}},
				{"1.5=x", []tk{nm("1.5"), p("="), w("x")}},
			})
			runErrCases(t, d.syn, []errCase{
				{"1abc", 1, "identifier character directly after number"},
				{"1e", 1, "identifier character directly after number"},
				{"1e+", 1, "identifier character directly after number"},
				{"x = 12e", 6, "identifier character directly after number"},
				{"1e+x", 1, "identifier character directly after number"},
				{"1.5f", 3, "identifier character directly after number"},
				{"1.x", 2, "identifier character directly after number"},
				{"0x", 1, "identifier character directly after number"},
				{"0xg", 1, "identifier character directly after number"},
				{"0x1g", 3, "identifier character directly after number"},
				{"0X1F", 1, "identifier character directly after number"},
				{"0b102", 4, "identifier character directly after number"},
				{"1_000", 1, "identifier character directly after number"},
				{"1$", 1, "identifier character directly after number"},
				{"1é", 1, "identifier character directly after number"},
				{".5x", 2, "identifier character directly after number"},
			})
		})
	}
}

func TestParams(t *testing.T) {
	runCases(t, Postgres, []lexCase{
		{"$1", []tk{pm("$1")}},
		{"$99999", []tk{pm("$99999")}},
		{"$01", []tk{pm("$01")}},
		{"a=$1,b=$2", []tk{w("a"), p("="), pm("$1"), p(","), w("b"), p("="), pm("$2")}},
		{"($1)", []tk{p("("), pm("$1"), p(")")}},
		{"$1::int", []tk{pm("$1"), p("::"), w("int")}},
		{"'$1'", []tk{s_("'$1'")}},
		{"-- $1\n", []tk{cm("-- $1")}},
		// ? is an operator in PostgreSQL.
		{"j ? 'a'", []tk{w("j"), p("?"), s_("'a'")}},
		{"j ?| b", []tk{w("j"), p("?|"), w("b")}},
		{"j ?& b", []tk{w("j"), p("?&"), w("b")}},
		{"j?a", []tk{w("j"), p("?"), w("a")}},
		{"a :b", []tk{w("a"), p(":"), w("b")}},
		{"@a", []tk{p("@"), w("a")}},
	})
	runErrCases(t, Postgres, []errCase{
		{"$0", 0, "parameter number out of range"},
		{"x $100000", 2, "parameter number out of range"},
		{"$99999999999999999999999", 0, "parameter number out of range"},
		{"$1a", 2, "identifier character directly after"},
		{"$1_", 2, "identifier character directly after"},
	})
	runCases(t, MySQL, []lexCase{
		{"?", []tk{pm("?")}},
		{"a=?,b=?", []tk{w("a"), p("="), pm("?"), p(","), w("b"), p("="), pm("?")}},
		{"(?)", []tk{p("("), pm("?"), p(")")}},
		{"??", []tk{pm("?"), pm("?")}},
		{"'?'", []tk{s_("'?'")}},
		{`"?"`, []tk{s_(`"?"`)}},
		{"`?`", []tk{qi("`?`")}},
		{"-- ?\n", []tk{cm("-- ?")}},
		{"# ?\n", []tk{cm("# ?")}},
		{"/* ? */", []tk{cm("/* ? */")}},
		{"@a := 1", []tk{p("@"), w("a"), p(":="), nm("1")}},
		{"@@session.x", []tk{p("@@"), w("session"), p("."), w("x")}},
		{"@'x'", []tk{p("@"), s_("'x'")}},
	})
	runErrCases(t, MySQL, []errCase{
		{"?1", 0, "unrecognized ? form"},
		{"x=?a", 2, "unrecognized ? form"},
		{"$1", 0, "unrecognized $"},
		{"$a", 0, "unrecognized $"},
		{"$$x$$", 0, "unrecognized $"},
	})
	runCases(t, MySQL, []lexCase{
		{"a$b", []tk{w("a$b")}},
	})
	var toks []Token
	toks, err := Lex("a=?123", SQLite)
	if err != nil || len(toks) != 3 || toks[2].Num != 123 || toks[2].Kind != KindParam {
		t.Errorf("SQLite ?123: %v %v", toks, err)
	}
	toks, err = Lex("$7", Postgres)
	if err != nil || len(toks) != 1 || toks[0].Num != 7 {
		t.Errorf("PG $7: %v %v", toks, err)
	}
	toks, err = Lex("?", MySQL)
	if err != nil || len(toks) != 1 || toks[0].Num != 0 {
		t.Errorf("MySQL ?: %v %v", toks, err)
	}
	runCases(t, SQLite, []lexCase{
		{"?", []tk{pm("?")}},
		{"?1", []tk{pm("?1")}},
		{"?1,?2", []tk{pm("?1"), p(","), pm("?2")}},
		{":name", []tk{pm(":name")}},
		{"@name", []tk{pm("@name")}},
		{"$name", []tk{pm("$name")}},
		{"$a::b", []tk{pm("$a::b")}},
		{":a::", []tk{pm(":a::")}},
		{"$1", []tk{pm("$1")}},
		{":é", []tk{pm(":é")}},
		{"(:a,@b,$c)", []tk{p("("), pm(":a"), p(","), pm("@b"), p(","), pm("$c"), p(")")}},
		{"x=:a", []tk{w("x"), p("="), pm(":a")}},
		{"':a'", []tk{s_("':a'")}},
		{"a$b", []tk{w("a$b")}},
	})
	for _, src := range []string{":name", "@name", "$name", "#name", "$a::b"} {
		toks, err := Lex(src, SQLite)
		if err != nil || toks[0].Num != 0 {
			t.Errorf("SQLite %s: %v %v", src, toks, err)
		}
	}
	runErrCases(t, SQLite, []errCase{
		{"?0", 0, "parameter number out of range"},
		{"?100000", 0, "parameter number out of range"},
		{"?1a", 2, "identifier character directly after"},
		{"?a", 0, "unrecognized ? form"},
		{":", 0, "unrecognized named parameter"},
		{"x = : a", 4, "unrecognized named parameter"},
		{"@", 0, "unrecognized named parameter"},
		{"$", 0, "unrecognized named parameter"},
		{"#", 0, "unrecognized named parameter"},
		{"a::int", 1, "unrecognized named parameter"},
		{"$a(b)", 0, "unrecognized named parameter"},
		{"$a::(b)", 0, "unrecognized named parameter"},
	})
}

func TestOperators(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			runCases(t, d.syn, []lexCase{
				{"a=b", []tk{w("a"), p("="), w("b")}},
				{"a==b", []tk{w("a"), p("=="), w("b")}},
				{"a<=b", []tk{w("a"), p("<="), w("b")}},
				{"a>=b", []tk{w("a"), p(">="), w("b")}},
				{"a<>b", []tk{w("a"), p("<>"), w("b")}},
				{"a!=b", []tk{w("a"), p("!="), w("b")}},
				{"a<=>b", []tk{w("a"), p("<=>"), w("b")}},
				{"a=>b", []tk{w("a"), p("=>"), w("b")}},
				{"a||b", []tk{w("a"), p("||"), w("b")}},
				{"a->b", []tk{w("a"), p("->"), w("b")}},
				{"a->>'b'", []tk{w("a"), p("->>"), s_("'b'")}},
				{"a<<b>>c", []tk{w("a"), p("<<"), w("b"), p(">>"), w("c")}},
				{"a=-1", []tk{w("a"), p("="), p("-"), nm("1")}},
				{"a=(b)", []tk{w("a"), p("="), p("("), w("b"), p(")")}},
				{"a=,", []tk{w("a"), p("="), p(",")}},
				{"=;=", []tk{p("="), p(";"), p("=")}},
				{"a.=b", []tk{w("a"), p("."), p("="), w("b")}},
				{"(),;.", []tk{p("("), p(")"), p(","), p(";"), p(".")}},
				{"a=*", []tk{w("a"), p("="), p("*")}},
				{"a=<b", []tk{w("a"), p("="), p("<"), w("b")}},
				{"a=!b", []tk{w("a"), p("="), p("!"), w("b")}},
				{"a===b", []tk{w("a"), p("=="), p("="), w("b")}},
				{"a;b", []tk{w("a"), p(";"), w("b")}},
				{"a%b^c~d", []tk{w("a"), p("%"), w("b"), p("^"), w("c"), p("~"), w("d")}},
				{"{d '2020-01-01'}", []tk{p("{"), w("d"), s_("'2020-01-01'"), p("}")}},
				{"\\N", []tk{p("\\"), w("N")}},
			})
		})
	}
	runCases(t, Postgres, []lexCase{
		{"a::int", []tk{w("a"), p("::"), w("int")}},
		{"a:=1", []tk{w("a"), p(":="), nm("1")}},
		{"a @> b <@ c", []tk{w("a"), p("@>"), w("b"), p("<@"), w("c")}},
		{"a ~* b !~ c !~* d", []tk{w("a"), p("~*"), w("b"), p("!~"), w("c"), p("!~*"), w("d")}},
		{"a[1:2]", []tk{w("a"), p("["), nm("1"), p(":"), nm("2"), p("]")}},
		{`"t".5`, []tk{qi(`"t"`), p("."), nm("5")}},
	})
	runCases(t, MySQL, []lexCase{
		{`"t".5`, []tk{s_(`"t"`), nm(".5")}},
		{"`t`.5", []tk{qi("`t`"), p("."), nm("5")}},
	})
}

func TestWords(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			runCases(t, d.syn, []lexCase{
				{"UPDATE t SET x = 1", []tk{w("UPDATE"), w("t"), w("SET"), w("x"), p("="), nm("1")}},
				{"update_log", []tk{w("update_log")}},
				{"my_update", []tk{w("my_update")}},
				{"_x1", []tk{w("_x1")}},
				{"données", []tk{w("données")}},
				{"表 = 1", []tk{w("表"), p("="), nm("1")}},
				{"a\u00a0b", []tk{w("a\u00a0b")}},
				{"\xff\xfe", []tk{w("\xff\xfe")}},
				{"x\xef\xbb\xbfy", []tk{w("x\xef\xbb\xbfy")}},
				{"a\x01b", []tk{w("a"), p("\x01"), w("b")}},
				{"\x7f", []tk{p("\x7f")}},
			})
			runErrCases(t, d.syn, []errCase{
				{"\xef\xbb\xbfSELECT 1", 0, "byte order mark"},
				{"x \xef\xbb\xbfy", 2, "byte order mark"},
			})
		})
	}
}

func TestNULRejected(t *testing.T) {
	for _, d := range dialects {
		runErrCases(t, d.syn, []errCase{
			{"\x00", 0, "NUL"},
			{"SELECT 1\x00", 8, "NUL"},
			{"DELETE FROM t -- \x00\nWHERE id = 1", 17, "NUL"},
			{"x /* \x00 */", 5, "NUL"},
			{"'\x00'", 1, "NUL"},
		})
	}
}

func TestSpaces(t *testing.T) {
	src := " \t\r\n\f\va  b"
	toks, err := Lex(src, Postgres)
	if err != nil {
		t.Fatal(err)
	}
	want := []Token{
		{Kind: KindSpace, Start: 0, End: 6},
		{Kind: KindWord, Start: 6, End: 7},
		{Kind: KindSpace, Start: 7, End: 9},
		{Kind: KindWord, Start: 9, End: 10},
	}
	if fmt.Sprint(toks) != fmt.Sprint(want) {
		t.Errorf("got %v want %v", toks, want)
	}
	toks, err = Lex("", Postgres)
	if err != nil || len(toks) != 0 {
		t.Errorf("empty input: %v %v", toks, err)
	}
}

func TestFullStatement(t *testing.T) {
	src := "UPDATE accounts SET balance = balance - $1, updated_at = now() WHERE id = $2 RETURNING balance"
	toks, err := Lex(src, Postgres)
	if err != nil {
		t.Fatal(err)
	}
	sig := Significant(toks)
	var got []string
	for _, tok := range sig {
		got = append(got, tok.Text(src))
	}
	want := "UPDATE accounts SET balance = balance - $1 , updated_at = now ( ) WHERE id = $2 RETURNING balance"
	if strings.Join(got, " ") != want {
		t.Errorf("got %q", strings.Join(got, " "))
	}
	if sig[7].Kind != KindParam || sig[7].Num != 1 || sig[17].Kind != KindParam || sig[17].Num != 2 {
		t.Errorf("params: %v %v", sig[7], sig[17])
	}
	runCases(t, MySQL, []lexCase{
		{"INSERT /*+ SET_VAR(x=1) */ INTO `t` (`a`,b) VALUES (?, 'x\\'y') # c\n;",
			[]tk{w("INSERT"), ex("/*+ SET_VAR(x=1) */"), w("INTO"), qi("`t`"), p("("), qi("`a`"), p(","), w("b"), p(")"),
				w("VALUES"), p("("), pm("?"), p(","), s_("'x\\'y'"), p(")"), cm("# c"), p(";")}},
	})
	runCases(t, SQLite, []lexCase{
		{"DELETE FROM [my table] WHERE \"id\" = :id; -- bye",
			[]tk{w("DELETE"), w("FROM"), qi("[my table]"), w("WHERE"), qi(`"id"`), p("="), pm(":id"), p(";"), cm("-- bye")}},
	})
}

func TestErrorDoesNotQuoteSQL(t *testing.T) {
	secret := "s3cr3t-password"
	for _, d := range dialects {
		for _, src := range []string{"'" + secret, "/* " + secret, "`" + secret, "\"" + secret, secret + "\x00"} {
			_, err := Lex(src, d.syn)
			if err == nil {
				if d.syn.DoubleQuoteStrings || !strings.HasPrefix(src, "`") {
					t.Errorf("%s %q: no error", d.name, src)
				}
				continue
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error quotes SQL: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "sqllex: ") {
				t.Errorf("error text: %v", err)
			}
		}
	}
}

func TestLexAppend(t *testing.T) {
	buf := make([]Token, 0, 64)
	buf = append(buf, Token{Kind: KindWord, Start: 0, End: 1})
	out, err := LexAppend(buf, "a b", Postgres)
	if err != nil || len(out) != 4 || out[0] != buf[0] || out[1].Kind != KindWord {
		t.Fatalf("LexAppend: %v %v", out, err)
	}
	out2, err := LexAppend(out[:1], "a 'b", Postgres)
	if err == nil || len(out2) != 1 {
		t.Fatalf("LexAppend error: %v %v", out2, err)
	}
	// Reusing a slice does not allocate.
	src := "UPDATE t SET a = $1 WHERE id = $2"
	allocs := testing.AllocsPerRun(100, func() {
		buf, _ = LexAppend(buf[:0], src, Postgres)
	})
	if allocs != 0 {
		t.Errorf("LexAppend allocates %v times", allocs)
	}
	allocs = testing.AllocsPerRun(100, func() {
		_, _ = Lex(src, Postgres)
	})
	if allocs != 1 {
		t.Errorf("Lex allocates %v times, want 1", allocs)
	}
}

func TestIsKeyword(t *testing.T) {
	src := "update UPDATE UpDaTe updates \"update\" 'update' ｕpdate"
	toks, err := Lex(src, Postgres)
	if err != nil {
		t.Fatal(err)
	}
	sig := Significant(toks)
	want := []bool{true, true, true, false, false, false, false}
	for i, tok := range sig {
		if got := IsKeyword(src, tok, "UPDATE"); got != want[i] {
			t.Errorf("IsKeyword(%q) = %v", tok.Text(src), got)
		}
	}
	if IsKeyword(src, Token{Kind: KindWord, Start: 50, End: 56}, "UPDATE") {
		t.Error("out of range token")
	}
	// Non-ASCII case folding does not apply (Turkish dotless i, Kelvin sign).
	src = "ıd \u212aEY"
	toks, _ = Lex(src, Postgres)
	if IsKeyword(src, toks[0], "ID") || IsKeyword(src, toks[2], "KEY") {
		t.Error("non-ASCII folding")
	}
}

func TestIdent(t *testing.T) {
	type identCase struct {
		syn    Syntax
		src    string
		name   string
		quoted bool
		ok     bool
	}
	for _, c := range []identCase{
		{Postgres, "Accounts", "Accounts", false, true},
		{Postgres, `"Acc""ounts"`, `Acc"ounts`, true, true},
		{Postgres, `"a"`, "a", true, true},
		{Postgres, `""""`, `"`, true, true},
		{Postgres, `""`, "", true, false},
		{Postgres, `U&"a"`, "", true, false},
		{Postgres, `'a'`, "", false, false},
		{Postgres, `1`, "", false, false},
		{MySQL, "`back``tick`", "back`tick", true, true},
		{MySQL, "`a\"b`", `a"b`, true, true},
		{MySQL, `"a"`, "", false, false},
		{SQLite, "[a b]", "a b", true, true},
		{SQLite, "[a]", "a", true, true},
		{SQLite, "[a\"b]", "a\"b", true, true},
		{SQLite, "[]", "", true, false},
		{SQLite, "données", "données", false, true},
	} {
		toks, err := Lex(c.src, c.syn)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		name, quoted, ok := Ident(c.src, toks[0])
		if name != c.name || quoted != c.quoted || ok != c.ok {
			t.Errorf("Ident(%q) = %q %v %v, want %q %v %v", c.src, name, quoted, ok, c.name, c.quoted, c.ok)
		}
	}
	if _, _, ok := Ident("ab", Token{Kind: KindWord, Start: 1, End: 5}); ok {
		t.Error("out of range token")
	}
}

func TestSignificant(t *testing.T) {
	src := "a /* c */ -- d\n/*! e */ b"
	toks, err := Lex(src, MySQL)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tok := range Significant(toks) {
		got = append(got, tok.Text(src))
	}
	if strings.Join(got, "|") != "a|/*! e */|b" {
		t.Errorf("got %q", got)
	}
}

func TestKindString(t *testing.T) {
	if KindExecComment.String() != "ExecComment" || Kind(200).String() != "Kind(200)" {
		t.Error(KindExecComment.String(), Kind(200).String())
	}
	e := &Error{Pos: 3, Msg: "unterminated string literal"}
	if e.Error() != "sqllex: unterminated string literal at byte offset 3" {
		t.Error(e.Error())
	}
}
