// Package secret finds the secrets in a DSN (its passwords) and masks them in
// messages, for the fenced pools' driver errors and the commands (fencedsql-schema,
// lockfloor): a DSN's password never appears in their errors or output.
package secret

import (
	"net/url"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// secretKeys are the settings pgx (pgconn.ParseConfig) reads a secret from, in the
// keyword/value form and as a URL's query parameters: the server password and the
// client key's passphrase. The other settings it reads (passfile, sslkey, service,
// servicefile) name files, not secrets.
var secretKeys = map[string]bool{"password": true, "sslpassword": true}

// Passwords extracts every secret of a DSN, so that each can be masked in messages
// (Redact). It does not decide which form the DSN is in: it unions the secrets of every
// reading that could apply, since masking one string too many costs nothing and missing
// one prints a password (red-team rt43e F1: a keyword/value DSN with "://" in a value,
// application_name=http://…, was taken for a URL, and its password went unmasked;
// pgx takes the URL form only for a DSN that starts with postgres:// or postgresql://).
// The readings:
//
//   - URL (a DSN holding "://", its user information after the first one): the
//     password as pgx and libpq read it (up to the first '@' before the first '/'), as
//     net/url and its writer mean it (up to the last '@'), and each '@'-separated part
//     of that (postgres://u:pa@ss@h: pgx connects with "pa" and names the host "ss@h");
//     with no '@' before the first '/' but one after (an unescaped '/' or '?' in the
//     password strands it), the text from the first ':' to the last '@' and its parts.
//     Each as written and percent-decoded.
//   - query parameters (the pairs after the first '?', split at '&' and '?'): every
//     password and sslpassword value, as written and decoded.
//   - keyword/value (pgx's form, KeyValues): every password and sslpassword setting,
//     each occurrence, not only the last one pgx uses (a message may quote the whole
//     DSN), as KeyValues unescapes it, as written, and with every backslash escape
//     undone (pgx's own unescaping); a keyword is matched case-insensitively, and by
//     the last word before its '=' ("host password = p", which pgx refuses with an
//     error that quotes the DSN).
//   - go-sql-driver/mysql ([user[:password]@][net[(addr)]]/dbname[?params]): the text
//     from the first ':' to the last '@' before the last '/' — skipped for a DSN that
//     starts with a URL scheme this module's drivers read (postgres://, postgresql://,
//     redis://, rediss://), where it would be the URL's "//user:password".
//
// Empty values are left out; nil when none is found.
func Passwords(dsn string) []string {
	var out []string
	add := func(v string) {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	urlSecrets(dsn, add)
	querySecrets(dsn, add)
	keyValueSecrets(dsn, add)
	mysqlSecrets(dsn, add)
	// A value as written that is an escaped form of another value found is masked with
	// that one (Redact): leave it out.
	var kept []string
	for _, v := range out {
		if !slices.ContainsFunc(out, func(w string) bool { return w != v && slices.Contains(forms(w), v) }) {
			kept = append(kept, v)
		}
	}
	return kept
}

// addDecoded adds v as written and percent-decoded (net/url's path rules: '+' stays).
func addDecoded(v string, add func(string)) {
	add(v)
	if d, err := url.PathUnescape(v); err == nil {
		add(d)
	}
}

// urlSecrets adds the user information's password of a URL reading of dsn (Passwords).
func urlSecrets(dsn string, add func(string)) {
	i := strings.Index(dsn, "://")
	if i < 0 {
		return
	}
	rest := dsn[i+3:]
	auth := rest
	if slash := strings.IndexByte(rest, '/'); slash >= 0 {
		auth = rest[:slash]
	}
	if at := strings.IndexByte(auth, '@'); at >= 0 {
		// pgx and libpq: the user information ends at the first '@'.
		if _, pw, ok := strings.Cut(auth[:at], ":"); ok {
			addDecoded(pw, add)
		}
		// net/url, and what a writer of an unescaped '@' means: the last '@'.
		if _, pw, ok := strings.Cut(auth[:strings.LastIndexByte(auth, '@')], ":"); ok {
			addDecoded(pw, add)
			for _, part := range strings.Split(pw, "@") {
				addDecoded(part, add)
			}
		}
		return
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		// No '@' before the first '/', one after: a '/' or '?' in the password may
		// have stranded it (postgres://u:pa/ss@h/db).
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			addDecoded(pw, add)
			for _, part := range strings.FieldsFunc(pw, func(r rune) bool { return r == '@' || r == '/' || r == '?' }) {
				addDecoded(part, add)
			}
		}
	}
}

// querySecrets adds the password and sslpassword values of the query parameters of dsn
// (Passwords): the pairs after its first '?', split at '&' and '?' (a '?' in an
// unescaped password moves the first one).
func querySecrets(dsn string, add func(string)) {
	q := strings.IndexByte(dsn, '?')
	if q < 0 {
		return
	}
	for _, pair := range strings.FieldsFunc(dsn[q+1:], func(r rune) bool { return r == '&' || r == '?' }) {
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if secretKeys[strings.ToLower(strings.TrimSpace(k))] {
			addDecoded(v, add)
			if d, err := url.QueryUnescape(v); err == nil {
				add(d)
			}
		}
	}
}

// keyValueSecrets adds the password and sslpassword settings of a keyword/value
// reading of dsn (Passwords).
func keyValueSecrets(dsn string, add func(string)) {
	if !strings.Contains(dsn, "=") {
		return
	}
	for _, kv := range KeyValues(dsn) {
		words := strings.Fields(kv.Key)
		if len(words) == 0 || !secretKeys[strings.ToLower(words[len(words)-1])] {
			continue
		}
		add(kv.Value)
		// The value as written: after the '=' and the blanks, without its quotes.
		_, raw, _ := strings.Cut(dsn[kv.Start:kv.End], "=")
		raw = strings.TrimLeft(raw, blanks)
		if strings.HasPrefix(raw, "'") {
			raw = strings.TrimSuffix(raw[1:], "'")
		}
		add(raw)
		add(unescapeAll(raw))
	}
}

// unescapeAll undoes every backslash escape of a keyword/value value, as pgx does
// (unescapeKeywordValue): a backslash is dropped and the byte after it kept.
func unescapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// urlSchemes are the DSN prefixes this module's drivers and clients read as URLs,
// never as go-sql-driver/mysql DSNs (mysqlSecrets).
var urlSchemes = []string{"postgres://", "postgresql://", "redis://", "rediss://"}

// mysqlSecrets adds the password of a go-sql-driver/mysql reading of dsn (Passwords),
// as its ParseDSN finds it: the text from the first ':' to the last '@' before the
// last '/' (or in the whole DSN when it has no '/').
func mysqlSecrets(dsn string, add func(string)) {
	for _, p := range urlSchemes {
		if strings.HasPrefix(dsn, p) {
			return
		}
	}
	head := dsn
	if slash := strings.LastIndexByte(dsn, '/'); slash >= 0 {
		head = dsn[:slash]
	}
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		if _, p, ok := strings.Cut(head[:at], ":"); ok {
			add(p)
		}
	}
}

// Redact masks every one of secrets in s (Passwords), each as written and in every
// escaped form a message may quote it in: URL-escaped (query, path, user information:
// @ → %40, space → %20) and keyword/value-escaped (\\ and \' in a value, KeyValues).
// The longer forms are masked first, so that masking one does not leave the rest of
// another. An occurrence inside a word — continuing a run of letters, digits, '_' or
// '-' on a side where the secret itself starts or ends with one — is left alone: it is
// the message's own text ("fencedsql", "raise-floor"), not the secret as a DSN quotes
// it (after ':', '=', a quote or a blank, before '@', a blank, a quote, '&' or the
// end). Masking it would mangle the message and tell its reader which word the
// password is (red-team rt41b F5).
func Redact(s string, secrets ...string) string {
	var all []string
	for _, secret := range secrets {
		if secret != "" {
			all = append(all, forms(secret)...)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
	for _, f := range all {
		s = maskForm(s, f)
	}
	return s
}

// forms are the spellings of secret that Redact masks: as written, keyword/value-escaped
// and URL-escaped (query, path, user information).
func forms(secret string) []string {
	return []string{
		secret,
		strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(secret),
		url.QueryEscape(secret),
		url.PathEscape(secret),
		strings.TrimPrefix(url.UserPassword("", secret).String(), ":"),
	}
}

// maskForm replaces with "xxxxx" every occurrence of f in s that is not inside a word
// (Redact).
func maskForm(s, f string) string {
	first, _ := utf8.DecodeRuneInString(f)
	last, _ := utf8.DecodeLastRuneInString(f)
	var b strings.Builder
	for {
		i := strings.Index(s, f)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(f):])
		inWord := (i > 0 && wordRune(first) && wordRune(before)) ||
			(i+len(f) < len(s) && wordRune(last) && wordRune(after))
		b.WriteString(s[:i])
		if inWord {
			b.WriteString(f)
		} else {
			b.WriteString("xxxxx")
		}
		s = s[i+len(f):]
	}
}

// wordRune reports whether r continues a word of a message (Redact).
func wordRune(r rune) bool {
	return r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
