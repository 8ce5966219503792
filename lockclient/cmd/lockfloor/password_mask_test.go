package main

import (
	"strings"
	"testing"
)

// A DSN with "://" in a value is read in its own form, not taken for a URL, and its
// password is masked (red-team rt43e F1: a keyword/value DSN with
// application_name=http://x printed "password = p", which pgx's redaction misses);
// likewise a MySQL DSN with a URL in a parameter, and a URL password with an
// unescaped '@' (both halves).
func TestPasswordMaskedWhateverTheDSNForm(t *testing.T) {
	const pw = "S3cr3t-kvurl"
	for _, args := range [][]string{
		{"-backend", "postgres", "-dsn", "host=127.0.0.1 port=1 user=app password = " + pw + " sslmode=bogus application_name=http://x"},
		{"-backend", "postgres", "-dsn", "postgres://app:" + pw + "@TAIL-kvurl@127.0.0.1:1/db?connect_timeout=1"},
		{"-backend", "mysql", "-dsn", "app:" + pw + "@tcp(127.0.0.1:1)/db?timeout=1s&program_name=http://x"},
	} {
		code, out, errOut := lockfloor(t, append(args, "-show", "-timeout", "3s")...)
		if code == 0 {
			t.Errorf("exit 0")
		}
		if strings.Contains(out+errOut, pw) || strings.Contains(out+errOut, "TAIL-kvurl") {
			t.Errorf("exit %d: password printed:\n%s%s", code, out, errOut)
		}
	}
}
