package main

import (
	"strings"
	"testing"
)

// TestStrayArgumentsMaskPassword (red-team rt44f F3): a keyword/value DSN left unquoted,
// or a second MySQL DSN, reaches the command as stray arguments; the usage error
// "unexpected arguments [...]" prints them with the password masked (secret.Args).
func TestStrayArgumentsMaskPassword(t *testing.T) {
	const pw = "S3cr3t-stray"
	for _, args := range [][]string{
		{"-backend", "postgres", "-dsn", "host=127.0.0.1", "user=app", "password=" + pw, "-show"},
		{"-backend", "mysql", "-show", "-dsn", "app:x@tcp(127.0.0.1:1)/db", "app:" + pw + "@tcp(127.0.0.1:1)/db"},
		{"-backend", "redis", "-show", "-addr", "redis://:x@127.0.0.1:1/0", "redis://:" + pw + "@127.0.0.1:1/0"},
	} {
		code, out, errOut := lockfloor(t, args...)
		if code == 0 {
			t.Errorf("exit 0 for %q", args)
		}
		if strings.Contains(out+errOut, pw) {
			t.Errorf("exit %d: the password is printed:\n%s%s", code, out, strings.ReplaceAll(errOut, pw, "<PASSWORD>"))
		}
	}
}
