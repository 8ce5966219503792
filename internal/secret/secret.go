// Package secret finds the password in a DSN and masks it in messages, for the
// commands (fencedsql-schema, lockfloor): a DSN's password never appears in their
// errors or output.
package secret

import (
	"net/url"
	"strings"
)

// Password extracts the password of a URL (postgres://, redis://), a pgx
// keyword/value DSN or a go-sql-driver/mysql DSN, so that it can be masked in messages;
// "" when none is found.
func Password(dsn string) string {
	if strings.Contains(dsn, "://") {
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			p, _ := u.User.Password()
			return p
		}
		return ""
	}
	if i := strings.Index(dsn, "password="); i >= 0 && (i == 0 || dsn[i-1] == ' ') {
		v := dsn[i+len("password="):]
		if strings.HasPrefix(v, "'") {
			v = v[1:]
			if j := strings.Index(v, "'"); j >= 0 {
				v = v[:j]
			}
			return v
		}
		if j := strings.IndexAny(v, " \t"); j >= 0 {
			v = v[:j]
		}
		return v
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

// Redact masks the password (and its URL-escaped forms) in s.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	s = strings.ReplaceAll(s, secret, "xxxxx")
	if esc := url.QueryEscape(secret); esc != secret {
		s = strings.ReplaceAll(s, esc, "xxxxx")
	}
	if esc := url.PathEscape(secret); esc != secret {
		s = strings.ReplaceAll(s, esc, "xxxxx")
	}
	// as a URL's user information escapes it (@ → %40, space → %20)
	if esc := strings.TrimPrefix(url.UserPassword("", secret).String(), ":"); esc != secret {
		s = strings.ReplaceAll(s, esc, "xxxxx")
	}
	return s
}
