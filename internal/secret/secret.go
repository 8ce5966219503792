// Package secret finds the password in a DSN and masks it in messages, for the
// commands (fencedsql-schema, lockfloor): a DSN's password never appears in their
// errors or output.
package secret

import (
	"net/url"
	"sort"
	"strings"
)

// Password extracts the password of a URL (postgres://, redis://), a pgx
// keyword/value DSN (read as pgx reads it, KeyValues: "password = p", "password='a b'",
// escaped quotes) or a go-sql-driver/mysql DSN, so that it can be masked in messages;
// "" when none is found.
func Password(dsn string) string {
	if strings.Contains(dsn, "://") {
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			p, _ := u.User.Password()
			return p
		}
		return ""
	}
	if IsKeyValue(dsn) {
		// Read as pgx reads it (KeyValues): blanks around '=', quotes, escapes; the last
		// password wins, as in pgx.
		pw, found := "", false
		for _, kv := range KeyValues(dsn) {
			if kv.Key == "password" {
				pw, found = kv.Value, true
			}
		}
		if found {
			return pw
		}
	}
	// go-sql-driver/mysql: [user[:password]@][net[(addr)]]/dbname[?params]
	if slash := strings.LastIndex(dsn, "/"); slash >= 0 {
		if at := strings.LastIndex(dsn[:slash], "@"); at >= 0 {
			if _, p, ok := strings.Cut(dsn[:at], ":"); ok {
				return p
			}
		}
	}
	return ""
}

// Redact masks the password in s, as written and in every escaped form a message may
// quote it in: URL-escaped (query, path, user information: @ → %40, space → %20) and
// keyword/value-escaped (\\ and \' in a value, KeyValues). The longer forms are
// masked first, so that masking one does not leave the rest of another.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	forms := []string{
		secret,
		strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(secret),
		url.QueryEscape(secret),
		url.PathEscape(secret),
		strings.TrimPrefix(url.UserPassword("", secret).String(), ":"),
	}
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	for _, f := range forms {
		s = strings.ReplaceAll(s, f, "xxxxx")
	}
	return s
}
