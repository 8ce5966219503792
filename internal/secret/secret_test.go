package secret

import (
	"net/url"
	"strings"
	"testing"
)

func TestPassword(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u:p%40ss@h/db":                     "p@ss",
		"postgres://u@h/db":                            "",
		"host=h password='a b' user=u":                 "a b",
		"user=u password=pw host=h":                    "pw",
		"u:p@ss@tcp(h:3306)/db?parseTime=true":         "p@ss",
		"u@tcp(h:3306)/db":                             "",
		"file:/tmp/x.db?_pragma=busy_timeout(5000)":    "",
		"mypassword=x host=h":                          "",
		"root:pw@unix(/var/run/mysqld/mysqld.sock)/db": "pw",
	} {
		if got := Password(dsn); got != want {
			t.Errorf("Password(%q) = %q, want %q", dsn, got, want)
		}
	}
	if got := Redact("auth failed for p@ss (p%40ss)", "p@ss"); strings.Contains(got, "p@ss") || strings.Contains(got, "p%40ss") {
		t.Errorf("redact = %q", got)
	}
}

// The mask covers every DSN form, as written and URL-escaped, whatever a driver's error
// quotes of it.
func TestRedact(t *testing.T) {
	const pw = "p@ss w/rd"
	for _, dsn := range []string{
		(&url.URL{Scheme: "postgres", User: url.UserPassword("app", pw), Host: "db", Path: "/x"}).String(),
		"host=db user=app password='" + pw + "' dbname=x",
		"app:" + pw + "@tcp(db:3306)/x",
		(&url.URL{Scheme: "redis", User: url.UserPassword("", pw), Host: "db:6379", Path: "/0"}).String(),
	} {
		secret := Password(dsn)
		if secret != pw {
			t.Errorf("Password(%q) = %q, want %q", dsn, secret, pw)
		}
		if got := Redact("cannot connect to "+dsn, secret); strings.Contains(got, "ss w") || strings.Contains(got, "ss%20w") {
			t.Errorf("redact left the password in %q", got)
		}
	}
}
