package main

import (
	"strings"
	"testing"
)

// The command promises "The DSN is never printed, and its password is masked in
// driver errors": for every keyword/value spelling pgx reads (red-team rt31d F7:
// blanks around '=' were missed, and a parse error printed the password).
func TestPasswordMaskedKeywordValueSpellings(t *testing.T) {
	const pw = "s3cr3t-Pw31d"
	for _, spelling := range []string{"password = " + pw, "password =" + pw, "password= " + pw, "password\t=\t" + pw, "password = '" + pw + "'"} {
		dsn := "host=127.0.0.1 port=1 user=app " + spelling + " dbname=shop sslmode=bogus"
		code, out, errOut := runCmd(t, "-driver", "postgres", "-dsn", dsn, "-tables", "accounts")
		if code == 0 {
			t.Errorf("%q: exit 0", strings.ReplaceAll(spelling, pw, "PW"))
		}
		if strings.Contains(out+errOut, pw) {
			t.Errorf("exit %d: password printed for %q:\n%s%s", code, strings.ReplaceAll(spelling, pw, "PW"), out, errOut)
		}
	}
}

// A keyword/value DSN with "://" in a value (application_name=http://…) is still read
// as keyword/value, as pgx reads it, and its password is masked (red-team rt43e F1:
// it was taken for a URL, nothing was masked, and pgx's redaction misses
// "password = p"); so is a URL password with an unescaped '@', both halves.
func TestPasswordMaskedWhateverTheDSNForm(t *testing.T) {
	const pw = "S3cr3t-kvurl"
	for _, dsn := range []string{
		"host=127.0.0.1 port=1 user=app password = " + pw + " dbname=shop sslmode=bogus application_name=http://x",
		"sslrootcert=file:///etc/ssl/ca.pem host=127.0.0.1 port=1 user=app password = '" + pw + "' sslmode=bogus",
		"postgres://app:" + pw + "@TAIL-kvurl@127.0.0.1:1/shop?connect_timeout=1",
	} {
		code, out, errOut := runCmd(t, "-driver", "postgres", "-dsn", dsn, "-tables", "accounts")
		if code == 0 {
			t.Errorf("exit 0")
		}
		if strings.Contains(out+errOut, pw) || strings.Contains(out+errOut, "TAIL-kvurl") {
			t.Errorf("exit %d: password printed:\n%s%s", code, out, errOut)
		}
	}
}
