package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The password mask rewrites only the password, not a word of the message that
// happens to equal it (red-team rt41b F5: "fenced" turned "fencedsql: RaiseTokenFloor"
// into "xxxxxsql: RaiseTokenFloor", telling a reader of the logs which word the
// password is). The same failure (nothing listens on the port; the
// password appears nowhere in the error) must print the same message whatever the
// password.
func TestPasswordMaskLeavesMessageText(t *testing.T) {
	msg := func(pw string) string {
		_, _, errOut := runCmd(t, "-driver", "mysql", "-dsn", "app:"+pw+"@tcp(127.0.0.1:1)/shop?timeout=2s", "-raise-floor", "5")
		return errOut
	}
	base := msg("Zq7-unrelated-9Xv")
	for _, pw := range []string{"fenced", "sql", "floor", "raise"} {
		if got := msg(pw); got != base {
			t.Errorf("password %q: the message changed with the password (it does not contain it):\n got  %s\n want %s", pw, got, base)
		}
	}
}

// -dsn-env and -dsn-file give the DSN off the command line (red-team rt41b F1); with
// -dsn they are a usage error, and no message shows the DSN.
func TestDSNFromEnvironmentOrFile(t *testing.T) {
	const dsn = "app:Pw41bSecret@tcp(127.0.0.1:1)/shop?timeout=2s"
	t.Setenv("FSQL_TEST_DSN_41B", dsn)
	file := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(file, []byte(dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, base := runCmd(t, "-driver", "mysql", "-dsn", dsn, "-raise-floor", "5")
	for _, args := range [][]string{
		{"-dsn-env", "FSQL_TEST_DSN_41B"},
		{"-dsn-file", file},
	} {
		code, _, errOut := runCmd(t, append([]string{"-driver", "mysql", "-raise-floor", "5"}, args...)...)
		if code != exitProblems || errOut != base {
			t.Errorf("%q: exit %d, %q; want exit 1 and %q (the same connection failure as with -dsn)", args, code, errOut, base)
		}
	}
	for _, args := range [][]string{
		{"-dsn", dsn, "-dsn-env", "FSQL_TEST_DSN_41B"},
		{"-dsn-env", "FSQL_TEST_DSN_41B", "-dsn-file", file},
		{"-dsn-env", "FSQL_TEST_UNSET_41B"},
		{"-dsn-env", "FSQL_TEST_DSN_41B", "-max-token", "-allow-read-only"},
		{"-dsn-env", "FSQL_TEST_DSN_41B", "-tables", "t", "-allow-read-only"},
	} {
		code, _, errOut := runCmd(t, append([]string{"-driver", "mysql", "-raise-floor", "5"}, args...)...)
		if args[len(args)-1] == "-allow-read-only" && args[len(args)-2] == "t" {
			code, _, errOut = runCmd(t, append([]string{"-driver", "mysql"}, args...)...)
		}
		if code != exitUsage || strings.Contains(errOut, "Pw41bSecret") {
			t.Errorf("%q: exit %d (want %d), %q", args, code, exitUsage, errOut)
		}
	}
	code, _, errOut := runCmd(t, "-driver", "postgres", "-dsn-env", "FSQL_TEST_DSN_41B", "-raise-floor", "5", "-allow-read-only")
	if code != exitUsage || !strings.Contains(errOut, "-allow-read-only") {
		t.Errorf("postgres -allow-read-only: exit %d, %q; want a usage error", code, errOut)
	}
}

// A DSN of more than one line — an env file given to -dsn-file, a variable holding a
// line break — is a usage error that shows none of it, so no secret of its other lines
// is printed (red-team rt45e F3: pgx's parse error quoted the file's PGPASSWORD=… line).
func TestDSNOfMoreThanOneLineRefused(t *testing.T) {
	const pw = "Zq9linesSECRET"
	content := "postgres://app@127.0.0.1:1/db?sslmode=disable\nPGPASSWORD=" + pw + "\n"
	f := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FSQL_TEST_DSN_LINES", content)
	for _, args := range [][]string{
		{"-dsn-file", f},
		{"-dsn-env", "FSQL_TEST_DSN_LINES"},
		{"-dsn", strings.TrimSpace(content)},
	} {
		code, out, errOut := runCmd(t, append([]string{"-driver", "postgres", "-tables", "accounts", "-timeout", "3s"}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "has 2 lines") {
			t.Errorf("%q: exit %d, %q; want exit %d, \"has 2 lines\"", args[0], code, strings.ReplaceAll(errOut, pw, "<SECRET>"), exitUsage)
		}
		if strings.Contains(out+errOut, pw) || strings.Contains(errOut, "sslmode") {
			t.Errorf("%q: the DSN is printed:\n%s%s", args[0], out, strings.ReplaceAll(errOut, pw, "<SECRET>"))
		}
	}
}
