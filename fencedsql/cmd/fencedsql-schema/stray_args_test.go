package main

import (
	"strings"
	"testing"
)

// TestStrayArgumentsMaskPassword (red-team rt44f F3): a keyword/value DSN left unquoted
// in a shell script (-dsn host=h user=app password=$PW dbname=shop) reaches the command
// as several arguments; flag parsing stops after -dsn's first word, and the usage error
// "unexpected arguments [...]" prints the rest with the password masked (secret.Args).
func TestStrayArgumentsMaskPassword(t *testing.T) {
	const pw = "S3cr3t-stray"
	for _, args := range [][]string{
		{"-driver", "postgres", "-dsn", "host=127.0.0.1", "user=app", "password=" + pw, "dbname=shop", "-tables", "accounts"},
		{"-driver", "postgres", "-tables", "accounts", "-dsn", "host=127.0.0.1 user=app", "password", "=", pw},
	} {
		code, out, errOut := runCmd(t, args...)
		if code == 0 {
			t.Errorf("exit 0 for %q", args)
		}
		if strings.Contains(out+errOut, pw) {
			t.Errorf("exit %d: the password is printed:\n%s%s", code, out, strings.ReplaceAll(errOut, pw, "<PASSWORD>"))
		}
	}
}
