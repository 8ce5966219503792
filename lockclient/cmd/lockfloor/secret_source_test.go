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
