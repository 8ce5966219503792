package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -dsn-env/-dsn-file and -addr-env/-addr-file read the secret-bearing address off the
// command line (red-team rt41b F1); given with -dsn/-addr, or unset, they are usage
// errors that never show the value.
func TestSecretFromEnvironmentOrFile(t *testing.T) {
	const dsn = "postgres://app:Pw41bLock@127.0.0.1:1/x?connect_timeout=2"
	t.Setenv("LOCKFLOOR_TEST_DSN_41B", dsn)
	t.Setenv("LOCKFLOOR_TEST_ADDR_41B", "redis://:Pw41bLock@127.0.0.1:1/0")
	file := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(file, []byte(dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-backend", "postgres", "-dsn-env", "LOCKFLOOR_TEST_DSN_41B", "-show", "-timeout", "3s"},
		{"-backend", "postgres", "-dsn-file", file, "-show", "-timeout", "3s"},
		{"-backend", "redis", "-addr-env", "LOCKFLOOR_TEST_ADDR_41B", "-show", "-timeout", "3s"},
	} {
		// Nothing listens on port 1: the command gets as far as connecting.
		code, _, errOut := lockfloor(t, args...)
		if code != exitFailed || strings.Contains(errOut, "Pw41bLock") {
			t.Errorf("%q: exit %d, %q; want exit %d (cannot connect) without the password", args, code, errOut, exitFailed)
		}
	}
	for _, args := range [][]string{
		{"-backend", "postgres", "-dsn", dsn, "-dsn-env", "LOCKFLOOR_TEST_DSN_41B", "-show"},
		{"-backend", "postgres", "-dsn-env", "LOCKFLOOR_TEST_UNSET_41B", "-show"},
		{"-backend", "redis", "-addr-env", "LOCKFLOOR_TEST_ADDR_41B", "-addr-file", file, "-show"},
		{"-backend", "postgres", "-dsn-file", "-", "-addr-file", "-", "-show"},
	} {
		if code, _, errOut := lockfloor(t, args...); code != exitUsage || strings.Contains(errOut, "Pw41bLock") {
			t.Errorf("%q: exit %d (want %d), %q", args, code, exitUsage, errOut)
		}
	}
}

// A DSN or address read from a file or variable must be one line: an env file read
// whole is refused (usage, exit 2) without quoting it, so no secret of its other lines
// is printed (red-team rt45e F3: pgx's parse error quoted the file's PGPASSWORD=…).
func TestSecretOfMoreThanOneLineRefused(t *testing.T) {
	const pw = "Zq9linesSECRET"
	for _, content := range []string{
		"postgres://app@127.0.0.1:1/db?sslmode=disable\nPGPASSWORD=" + pw + "\n",
		"postgres://app@127.0.0.1:1/db?sslmode=disable\r\nREDIS_URL=redis://:" + pw + "@cache:6379/0\r\n",
	} {
		f := filepath.Join(t.TempDir(), "dsn")
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("LOCKFLOOR_TEST_LINES", content)
		for _, args := range [][]string{
			{"-backend", "postgres", "-dsn-file", f},
			{"-backend", "postgres", "-dsn-env", "LOCKFLOOR_TEST_LINES"},
			{"-backend", "redis", "-addr-file", f},
		} {
			code, out, errOut := lockfloor(t, append(args, "-show", "-timeout", "3s")...)
			if code != exitUsage || !strings.Contains(errOut, "has 2 lines") {
				t.Errorf("%q: exit %d, %q; want exit %d, \"has 2 lines\"", args, code, strings.ReplaceAll(errOut, pw, "<SECRET>"), exitUsage)
			}
			if strings.Contains(out+errOut, pw) || strings.Contains(errOut, "sslmode") {
				t.Errorf("%q: the file's content is printed:\n%s%s", args, out, strings.ReplaceAll(errOut, pw, "<SECRET>"))
			}
		}
	}
}
