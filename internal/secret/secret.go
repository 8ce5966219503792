// Package secret finds the secrets in a DSN (its passwords) and masks them in
// messages, for the fenced pools' driver errors and the commands (fencedsql-schema,
// lockfloor): a DSN's password never appears in their errors or output.
package secret

import (
	"maps"
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
// (Redact): of a URL (postgres://, redis://) the user information's password and every
// password/sslpassword query value; of a pgx keyword/value DSN every password and
// sslpassword setting (read as pgx reads it, KeyValues: "password = p",
// "password='a b'", escaped quotes), each occurrence, not only the last one pgx uses
// (a message may quote the whole DSN); of a go-sql-driver/mysql DSN its password. Empty
// values are left out; nil when none is found.
func Passwords(dsn string) []string {
	var out []string
	add := func(v string) {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil
		}
		if u.User != nil {
			p, _ := u.User.Password()
			add(p)
		}
		q := u.Query()
		for _, k := range slices.Sorted(maps.Keys(q)) {
			if secretKeys[strings.ToLower(k)] {
				for _, v := range q[k] {
					add(v)
				}
			}
		}
		return out
	}
	if IsKeyValue(dsn) {
		for _, kv := range KeyValues(dsn) {
			if secretKeys[kv.Key] {
				add(kv.Value)
			}
		}
		if out != nil {
			return out
		}
	}
	// go-sql-driver/mysql: [user[:password]@][net[(addr)]]/dbname[?params]
	if slash := strings.LastIndex(dsn, "/"); slash >= 0 {
		if at := strings.LastIndex(dsn[:slash], "@"); at >= 0 {
			if _, p, ok := strings.Cut(dsn[:at], ":"); ok {
				add(p)
			}
		}
	}
	return out
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
	var forms []string
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		forms = append(forms,
			secret,
			strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(secret),
			url.QueryEscape(secret),
			url.PathEscape(secret),
			strings.TrimPrefix(url.UserPassword("", secret).String(), ":"),
		)
	}
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	for _, f := range forms {
		s = maskForm(s, f)
	}
	return s
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
