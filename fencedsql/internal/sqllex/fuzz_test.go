package sqllex

import "testing"

// seedCorpus holds inputs from the unit tests plus hostile ones; it seeds
// FuzzLex and the property tests.
var seedCorpus = []string{
	// Typical statements.
	"UPDATE accounts SET balance = balance - $1, updated_at = now() WHERE id = $2 RETURNING balance",
	"INSERT INTO t (a, b) VALUES (?, ?)",
	"DELETE FROM `t` WHERE id = ? -- bye\n",
	"INSERT /*+ SET_VAR(x=1) */ INTO `t` (`a`,b) VALUES (?, 'x\\'y') # c\n;",
	"DELETE FROM [my table] WHERE \"id\" = :id; -- bye",
	"UPDATE t SET a = E'\\'' WHERE b = $$it's$$ AND c = $fn$ x $fn$",
	// Strings.
	"'it''s'", "'a\\'b'", "'a\\\\'", "'a\\' x", "'\\' OR 1=1 -- '", "\"a\\\"b\" x",
	"N'x' X'1F' B'01' U&'\\0041' UESCAPE '!'", "xy'1'", "_utf8mb4'x'",
	"E'a\\'b'", "e'a\\'b'", "stre'\\' x", "E'\\\\' x", "U&\"d\\0061t\"",
	"E'a'\n'\\' OR 1=1 --'", "E'a' -- c\n'b\\'c'", "E'a'\n--c'\\'", "E'a'\v\n'\\' x",
	// Dollar quotes and params.
	"$$abc$$", "$tag$ -- */ ' \" $TAG$ $tag$ x", "$a$$a$", "a$b", "a$$b$$", "$1$", "$0",
	"$99999999999999999999", "$1a", "$ä$x$ä$", "$abc x",
	// Quoted identifiers.
	"\"quoted \"\"ident\"\"\"", "`back``tick`", "[a b]]", "[abc", "\"abc", "`abc",
	// Comments.
	"-- hello\nx", "x --", "a--1", "a-- 1", "a--\r1\n2", "a--\u00a01", "-- a\rb",
	"/* /* nested */ still comment */ x", "/*/**/*/x", "/* /* */ x", "a+/*c*/b",
	"a->-- c\nb", "# hi ' \nx", "/* abc", "x /*/",
	// Executable comments.
	"/*! STRAIGHT_JOIN */ x", "/*!50110 KEY_BLOCK_SIZE=1024 */", "/*M!100301 x */",
	"/*+ BKA(@`qb1` t1) */", "/*!50000 x='*/' */", "/*! x # */\n */", "/*! a /* b */ c */",
	"/*! #'\n'*/' */", "/*! a--'b*/' */", "/*+a-\xab~*/", "/*! # it's\n x */", "/*! [a] `b` 'c' \"d\" -- e\n */",
	"/*!B'\\''*/", "/*!50110X'\\'' */", "/*! @b'\\'' */", "/*! ab'x' B'01' */",
	// Numbers.
	"1.5E-3", ".5e-3", "0x1f", "0b101", "t.col", "t.5", "1..2", "1abc", "0X1F", "1_000",
	// Params.
	"?", "??", "?1", "?a", ":name", "@name", "$name", "#name", "$a::b", "$a(b)", "a::int",
	"j ?| b", "@a := 1",
	// Hostile: identifiers containing keywords, Unicode, control bytes.
	"update_log", "\"update\".\"set\"", "données = 1", "表", "a\u00a0b", "\xff\xfe",
	"\xef\xbb\xbfSELECT 1", "x\xef\xbb\xbfy", "a\x01b", "\x7f",
	"UPDATE t SET x = 'unterminated", "UPDATE t SET x = $q$ cut", "DELETE FROM t /* cut",
	"\x00", "DELETE FROM t -- \x00\nWHERE id = 1", "'\x00'",
	"UPDATE \"t\" SET \"update\" = 'update t set' WHERE \"where\" = $1 -- update\n",
	"SELECT '\xc3' || '\xc3\xa9'", "E'\\\xc3\xa9'", "'\xc3\\' x",
}

func FuzzLex(f *testing.F) {
	for _, s := range seedCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, d := range dialects {
			checkLex(t, src, d.syn, d.name)
		}
	})
}
