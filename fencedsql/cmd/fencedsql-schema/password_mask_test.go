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
