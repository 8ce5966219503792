package fencedsql

import (
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/fencedsql/fencedsql/internal/secret"
)

// A parameter of this package found in a DSN where no reader takes it as one.
//
// The wrapper reads its parameters at the places where a DSN has parameter keys (the
// query after '?', the keywords of PostgreSQL's keyword/value form). Written anywhere
// else — glued to another parameter's value by a ',' or a percent-encoded '&'
// (charset=utf8mb4,fenced_tables=a; mode=rwc%26fenced_tables%3Da), after a '#' (a URI
// fragment, which SQLite ignores), after a '=' with no key, as a SQLite _pragma value,
// in a quoted keyword/value value, in a path — neither the wrapper nor the driver reads
// it as a parameter: the driver ignores it or takes it as part of a value (an
// application name, a character set to fall back to), and a pool that guards nothing
// opens without a word (red-team rt43b F1). paramOfOurs finds it, and every DSN path
// refuses it with a *ConfigError: the wrapper's splitDSN (sql.Open with a fenced
// driver name, OpenDB over DSNConnector) over what is left once it took its own
// parameters, and over its own parameters' values; DSNConnector's Connect; and the
// dialects' hook on a plain driver that ignores unknown parameters (DSNParam,
// MisplacedDSNParam: modernc's SQLite).

// foundParam is a parameter of this package that paramOfOurs found in a DSN.
type foundParam struct {
	// key is the key as written (url-decoded) or, found inside other text, the word
	// that reads as one. It is never quoted in an error as found there: that text may be
	// part of a password (nearest names the parameter it stands for).
	key string
	// where is "" for a parameter key; otherwise where the text was found, in words
	// that never quote the DSN but a parameter's key known not to be part of a secret
	// (placeOf).
	where string
}

func (f foundParam) found() bool { return f.key != "" }

// param is the parameter of this package f stands for.
func (f foundParam) param() string { return orDefault(nearest(f.key), ParamTables) }

// paramOfOurs returns the first parameter of this package, or text that reads as one,
// that dsn holds in any DSN form, the zero foundParam for none. It is the one reading
// every DSN path applies to what no fenced reader took (see above):
//
//   - a key: each text before '=' that follows the DSN's start, '?', '&', ';' or a
//     blank, url-decoded, that ours takes for a parameter of this package (where "");
//   - anywhere else, in the DSN as written and percent-decoded once and twice
//     (misplacedIn): a word of letters, digits, '_', '-' and '.' directly followed by
//     '(' (a _pragma=name(value)), or by '=' after optional blanks, some dot-separated
//     tail of which starts with "fenced_", "fenced-" or "fenced." in any letter case,
//     or is a near miss of a known parameter (nearest: FENCEDTABLES, fence_tables).
//
// So text that merely contains "fenced" is left alone — a database named
// fenced_app, a file under /srv/fenced_data/, a password fenced_pw — unless it reads as
// a parameter assignment (fenced_x=…, fenced_x(…)); a value that must hold such text
// cannot be given in a DSN read by this package (README: DSN parameters).
func paramOfOurs(dsn string) foundParam {
	sep := func(r rune) bool { return r == '?' || r == '&' || r == ';' || unicode.IsSpace(r) }
	for _, part := range strings.FieldsFunc(dsn, sep) {
		k, _, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if ours(k) {
			return foundParam{key: k}
		}
	}
	if word, at, ok := misplacedIn(dsn); ok {
		return foundParam{key: word, where: placeOf(dsn, at)}
	}
	return foundParam{}
}

// misplacedIn finds, in s as written and percent-decoded once and twice, a word that
// reads as an assignment of a parameter of this package (paramOfOurs); at is the
// offset in s where the text it was decoded from starts.
func misplacedIn(s string) (word string, at int, ok bool) {
	src := make([]int, len(s))
	for i := range src {
		src[i] = i
	}
	t := s
	for level := 0; level < 3; level++ {
		if w, i, ok := misplacedWord(t); ok {
			return w, src[i], true
		}
		d, dsrc := decodePercent(t, src)
		if d == t {
			break
		}
		t, src = d, dsrc
	}
	return "", 0, false
}

// misplacedWord scans t for the first word that reads as an assignment of a parameter
// of this package and returns it and its offset.
func misplacedWord(t string) (string, int, bool) {
	for i := 0; i < len(t); {
		if !wordByte(t[i]) || i > 0 && wordByte(t[i-1]) {
			i++
			continue
		}
		j := i
		for j < len(t) && wordByte(t[j]) {
			j++
		}
		k := j
		for k < len(t) && isSpace(t[k]) {
			k++
		}
		assigned := j < len(t) && t[j] == '(' || k < len(t) && t[k] == '='
		if assigned && readsAsOurs(t[i:j]) {
			return t[i:j], i, true
		}
		i = j
	}
	return "", 0, false
}

// wordByte reports the bytes of a word misplacedWord reads: ASCII letters, digits,
// '_', '-' and '.'.
func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// readsAsOurs reports whether word, or a tail of it after a '.', starts with "fenced"
// and a separator ('_', '-', '.') in any letter case, or is a near miss of a known
// parameter (nearest).
func readsAsOurs(word string) bool {
	for {
		w := strings.ToLower(word)
		if len(w) > len("fenced") && strings.HasPrefix(w, "fenced") && strings.ContainsRune("_-.", rune(w[len("fenced")])) {
			return true
		}
		if nearest(word) != "" {
			return true
		}
		_, rest, ok := strings.Cut(word, ".")
		if !ok {
			return false
		}
		word = rest
	}
}

// decodePercent decodes every well-formed %XX of s once and leaves every other byte
// as it is (a lone '%' in a password does not stop the decoding of the rest); src maps
// each byte of s to an offset in the DSN, and the returned slice does the same for the
// decoded text.
func decodePercent(s string, src []int) (string, []int) {
	var b strings.Builder
	out := make([]int, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			out = append(out, src[i])
			i += 2
			continue
		}
		b.WriteByte(s[i])
		out = append(out, src[i])
	}
	return b.String(), out
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// placeOf says where in dsn the byte at offset at lies, in words that quote nothing
// of the DSN but the key of the parameter whose value holds it, and that only when
// the key is a plain name that is not part of one of the DSN's passwords
// (secret.Passwords).
func placeOf(dsn string, at int) string {
	if h := strings.IndexByte(dsn, '#'); h >= 0 && h < at {
		return "after '#' (a URI fragment: SQLite ignores it, and no driver reads parameters there)"
	}
	pw := secret.Passwords(dsn)
	value := func(key string) string {
		key = strings.TrimSpace(key)
		if uk, err := url.QueryUnescape(key); err == nil {
			key = uk
		}
		switch {
		case key == "":
			return "in the value of a parameter without a key (a '=' with nothing before it)"
		case !plainKey(key) || slices.ContainsFunc(pw, func(p string) bool { return strings.Contains(p, key) }):
			return "in the value of another parameter"
		}
		return "in the value of the DSN's parameter " + key
	}
	if secret.IsKeyValue(dsn) {
		// A keyword/value DSN; a file name holding '=' (/srv/env=prod/t.db?…) reads as
		// one too, but its "keyword" is no plain name: it is read as a URL below.
		for _, kv := range secret.KeyValues(dsn) {
			if kv.Start <= at && at < kv.End && plainKey(kv.Key) {
				return value(kv.Key)
			}
		}
	}
	q := strings.IndexByte(dsn, '?')
	if q < 0 || at < q {
		return "before the DSN's parameters (in its file name, path, host, user or password)"
	}
	start := q + 1 + strings.LastIndexAny(dsn[q+1:at], "&;") + 1
	key, _, ok := strings.Cut(dsn[start:at], "=")
	if !ok {
		return "in a parameter's key"
	}
	return value(key)
}

// plainKey reports a parameter key placeOf may name: a plain name of at most 64
// letters, digits, '_' and '.', as every driver's keys are.
func plainKey(k string) bool {
	if k == "" || len(k) > 64 || '0' <= k[0] && k[0] <= '9' {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !wordByte(c) || c == '-' {
			return false
		}
	}
	return true
}

// misplacedErr is the refusal of a parameter of this package found where no reader
// takes it as one (f.where != "").
func misplacedErr(f foundParam) error {
	return configErr("the DSN holds text that reads as a parameter of this package (%s, or a spelling of it) %s, where neither this package nor the driver reads it as a parameter: the driver would ignore it or take it as part of a value, and the tables it names would go unguarded; separate parameters with '&' (in a keyword/value DSN, a blank), not ',', a percent-encoded '&' or '=', or '#', and give each once, as a key (a value of another parameter may not hold such text: README, DSN parameters)", f.param(), f.where)
}

// MisplacedDSNParam returns a *ConfigError when dsn holds text that reads as a
// parameter of this package where no DSN reader takes it as one — inside another
// parameter's value (glued by ',' or a percent-encoded '&', as a SQLite _pragma
// value, after a '=' with no key), after '#', in a path — and nil otherwise (a
// parameter of this package as a key included: see DSNParam). It is for a dialect
// whose plain driver ignores what it does not read (modernc's SQLite): the refusal
// names where the text is, never the DSN's own text.
func MisplacedDSNParam(dsn string) error {
	if f := paramOfOurs(dsn); f.found() && f.where != "" {
		return misplacedErr(f)
	}
	return nil
}
