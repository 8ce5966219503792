package secret

import (
	"slices"
	"strings"
	"testing"
)

// Passwords does not decide a DSN's form by a "://" anywhere in it: a keyword/value
// DSN with a URL in a value (application_name=http://…, sslrootcert=file:///…) is
// still read as keyword/value, as pgx reads it (it takes the URL form only for a DSN
// that starts with postgres:// or postgresql://), and its password is found
// (red-team rt43e F1: it was read as a URL, nothing was found, and pgx's redaction
// missed "password = p"). Every reading that could apply is unioned, and a DSN
// without a password yields none.
func TestPasswordsEveryReadingOfTheDSN(t *testing.T) {
	const pw = "S3cr3t-pw"
	for _, c := range []struct {
		dsn  string
		want []string
	}{
		// keyword/value with "://" in a value
		{"host=127.0.0.1 user=u password=" + pw + " application_name=http://x", []string{pw}},
		{"host=127.0.0.1 user=u password = " + pw + " sslrootcert=file:///etc/ssl/ca.pem", []string{pw}},
		{"application_name=a://b host=127.0.0.1 user=u password='" + pw + "'", []string{pw}},
		{"host=127.0.0.1 user=u password=" + pw + " options='-c search_path=x' application_name=svc://orders", []string{pw}},
		{"host=h application_name=http://u:x@y sslpassword = " + pw, []string{pw}},
		// keyword/value spellings pgx refuses with an error quoting the DSN, or sends on
		{"host password = " + pw + " user=u", []string{pw}},
		{"host=h PASSWORD=" + pw, []string{pw}},
		{`host=h password=` + pw + `\ x`, []string{pw + `\ x`, pw + " x"}},
		// URL: pgx's reading (the first '@') and the writer's (the last '@'), and the parts
		{"postgres://u:" + pw + "@TAIL@host/db", []string{pw + "@TAIL", pw, "TAIL"}},
		{"postgresql://u:" + pw + "%40x@host/db", []string{pw + "@x"}},
		{"postgres://u:" + pw + "/tail@h/db", []string{pw + "/tail", pw, "tail"}}, // '/' strands the '@'
		{"postgres://u:" + pw + "?q@h/db", []string{pw + "?q"}},                   // pgx: '@' before the first '/'
		{"postgres://h/db?sslmode=disable&Password=" + pw, []string{pw}},          // a query key in any case
		{"postgres://h1:5432,h2:5433/db?password=" + pw + "&x=1", []string{pw}},   // multi-host (net/url refuses it)
		{"redis://:" + pw + "@h:6379/0", []string{pw}},                            // lockfloor's -addr
		// go-sql-driver/mysql
		{"u:" + pw + "@tcp(h:3306)/db?parseTime=true", []string{pw}},
		{"u:" + pw + "@unix(/var/run/mysqld/mysqld.sock)/db", []string{pw}},
		{"u:" + pw + "@/db", []string{pw}},
		{"u:pa/ss@tcp(h)/db", []string{"pa/ss"}},
		{"u:pa@ss@tcp(h)/db", []string{"pa@ss"}},
		{"u:pa:ss@tcp(h)/db", []string{"pa:ss"}},
		{"u:pa=ss@tcp(h)/db", []string{"pa=ss"}},
		{"u:" + pw + "@tcp(h)/db?application_name=http://x", []string{pw}},
		// no password
		{"postgres://u@h/db", nil},
		{"postgres://h/db?application_name=x@y", nil},
		{"redis://h:6379/0", nil},
		{"host=h user=u application_name=http://x", nil},
		{"file:///tmp/x.db?_pragma=busy_timeout(5000)", nil},
		{"u@tcp(h:3306)/db", nil},
	} {
		got := Passwords(c.dsn)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("Passwords(%q) = %q, want it to hold %q", c.dsn, got, w)
			}
		}
		if c.want == nil && got != nil {
			t.Errorf("Passwords(%q) = %q, want none", c.dsn, got)
		}
		red := Redact("cannot parse `"+c.dsn+"`: failed", got...)
		for _, w := range c.want {
			if strings.Contains(red, w) {
				t.Errorf("Redact left %q in %q", w, red)
			}
		}
	}
}

// IsKeyValue takes a DSN for a URL only when it starts with a scheme, as pgx does, not
// for a "://" in a value (red-team rt43e F1).
func TestIsKeyValueSchemeOnlyAtTheStart(t *testing.T) {
	for dsn, want := range map[string]bool{
		"host=h application_name=http://x":  true,
		"sslrootcert=file:///ca.pem host=h": true,
		"postgres://u@h/db?x=1":             false,
		"file:///tmp/x.db?a=b":              false,
		"file:/tmp/x.db?a=b":                false,
		"u:p@tcp(h)/db?a=b":                 false,
		"1x://h a=b":                        true,
	} {
		if got := IsKeyValue(dsn); got != want {
			t.Errorf("IsKeyValue(%q) = %v, want %v", dsn, got, want)
		}
	}
}
