package secret

import (
	"net/url"
	"strings"
	"testing"
)

func TestPasswords(t *testing.T) {
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
		if got := strings.Join(Passwords(dsn), "|"); got != want {
			t.Errorf("Passwords(%q) = %q, want %q", dsn, got, want)
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
		secrets := Passwords(dsn)
		if len(secrets) != 1 || secrets[0] != pw {
			t.Errorf("Passwords(%q) = %q, want [%q]", dsn, secrets, pw)
		}
		if got := Redact("cannot connect to "+dsn, secrets...); strings.Contains(got, "ss w") || strings.Contains(got, "ss%20w") {
			t.Errorf("redact left the password in %q", got)
		}
	}
}

// Every secret pgx reads is found, each occurrence of it, in every form (red-team rt33a
// F5: "sslpassword = X" was not masked; F6: of "password = A … password = B" only B
// was), and Redact masks them all.
func TestPasswordsEverySecretSetting(t *testing.T) {
	for _, c := range []struct {
		dsn  string
		want []string
	}{
		{"host=h sslpassword = S3CRET sslmode=require", []string{"S3CRET"}},
		{"host=h sslpassword='k p' password=pw", []string{"k p", "pw"}},
		{"host=h password = FIRST password = second", []string{"FIRST", "second"}},
		{"host=h password=same password = same", []string{"same"}},
		{"host=h sslpassword= password=p", []string{"password=p"}}, // pgx skips the blanks after '='
		{"host=h mysslpassword=x sslpasswordx=y", nil},
		{"postgres://u:up@h/db?sslpassword=kp&password=qp", []string{"up", "kp", "qp"}},
		{"postgres://u@h/db?password=a9&password=b9", []string{"a9", "b9"}}, // single letters are letters of the message
	} {
		got := Passwords(c.dsn)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("Passwords(%q) = %q, want %q", c.dsn, got, c.want)
			continue
		}
		red := Redact("cannot parse `"+c.dsn+"`: failed", got...)
		for _, w := range c.want {
			if strings.Contains(red, w) {
				t.Errorf("Redact left %q in %q", w, red)
			}
		}
	}
}

// The mask leaves the message's own words alone where the password is one of them, or
// part of one (red-team rt41b F5: password "fenced" turned "fencedsql: …" into
// "xxxxxsql: …"), and still masks the password where a DSN quotes it.
func TestRedactLeavesWordsOfTheMessage(t *testing.T) {
	for _, pw := range []string{"fenced", "sql", "floor", "raise"} {
		msg := "fencedsql-schema: raise-floor: fencedsql: RaiseTokenFloor: dial tcp: refused"
		if got := Redact(msg, pw); got != msg {
			t.Errorf("password %q: %q became %q", pw, msg, got)
		}
		for _, dsn := range []string{"app:" + pw + "@tcp(db:3306)/x", "postgres://app:" + pw + "@db/x", "host=db password=" + pw + " user=app", "host=db password='" + pw + "'"} {
			if got := Redact("cannot parse `"+dsn+"`: bad", pw); strings.Contains(got, ":"+pw+"@") || strings.Contains(got, "="+pw) || strings.Contains(got, "'"+pw+"'") {
				t.Errorf("password %q: left in %q", pw, got)
			}
		}
	}
}
