package secret

import (
	"strings"
	"testing"
)

// TestArgsMasksSplitDSN: stray command-line arguments that are pieces of a DSN split
// at its blanks (red-team rt44f F3) come back with the password masked, whichever
// piece holds it.
func TestArgsMasksSplitDSN(t *testing.T) {
	const pw = "S3cr3t-pw"
	for _, c := range []struct {
		args []string
		dsns []string
	}{
		{[]string{"user=app", "password=" + pw, "dbname=shop"}, []string{"host=h"}},
		{[]string{"password", "=", pw}, []string{"host=h user=app"}},
		{[]string{"password", "=", "'" + pw + "'"}, nil},
		{[]string{"sslpassword=" + pw}, nil},
		{[]string{"app:" + pw + "@tcp(127.0.0.1:3306)/db"}, []string{"app:x@tcp(127.0.0.1:3306)/db"}},
		{[]string{"postgres://app:" + pw + "@h/db"}, nil},
		{[]string{"redis://:" + pw + "@h:6379/0"}, nil},
		{[]string{"host=h", "password='" + pw + "'"}, nil},
	} {
		got := Args(c.args, c.dsns...)
		if s := strings.Join(got, " "); strings.Contains(s, pw) {
			t.Errorf("Args(%q, %q) = %q: the password is left", c.args, c.dsns, got)
		}
	}
	if got := Args([]string{"-tables", "accounts"}); strings.Join(got, " ") != "-tables accounts" {
		t.Errorf("arguments without a secret changed: %q", got)
	}
}
