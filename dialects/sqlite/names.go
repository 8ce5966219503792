package sqlite

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// foldName returns an SQLite identifier (a table, column, index, trigger, collation or
// schema name, a keyword, a pragma name) folded as SQLite compares identifiers
// (sqlite3StrICmp, COLLATE NOCASE): ASCII letters to lower case, every other byte as
// it is. No other character folds: "É" and "é" are two columns, "ſ" (U+017F) is not
// "s", "K" (U+212A) is not "k". Every map of this package keyed by such a name is
// keyed by foldName, and every comparison of two such names is sameName: Go's
// strings.ToLower and strings.EqualFold fold further, which merges two columns into
// one (red-team rt61b F3: a unique key on a generated copy of the token hidden by its
// Unicode case twin, a TEXT token column read as its twin's BIGINT).
func foldName(name string) string { return dialect.LowerASCII(name) }

// sameName reports whether a and b name one object for SQLite: equal with ASCII
// letters compared without case (see foldName).
func sameName(a, b string) bool { return dialect.EqualFoldASCII(a, b) }

// upperWord returns a keyword as written, ASCII letters in upper case (see foldName),
// for comparing with and reporting SQLite's upper-case keywords.
func upperWord(word string) string {
	b := []byte(word)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}
