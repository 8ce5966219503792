package main

import (
	"strings"
	"testing"
)

// TestRaiseFloorArgumentIsDecimal (red-team rt37c, G14 "Procedures"): the
// switch/failover procedure feeds -raise-floor a number computed by a script
// (NEXT+1). -raise-floor is parsed by flag.Uint64, i.e. strconv.ParseUint(s, 0, 64):
// a leading 0 makes the number octal, "0x" hexadecimal, and "_" is accepted. A token
// written zero-padded (printf '%019d', a fixed-width column of a report, a JSON
// export) is then raised to a much LOWER floor than asked — 0000000000000001000 to
// 512 — and the command exits 0, so every lease with a token in [512, 1000) is not
// refused (fail-open). lockfloor -raise parses the same kind of argument with base 10
// and reads 0000000000000001000 as 1000.
//
// -raise-floor takes a decimal token, as lockfloor -raise does (token_flag.go): a
// zero-padded decimal is that decimal, never an octal or hexadecimal number; the
// floor in force afterwards is 1000.
func TestRaiseFloorArgumentIsDecimal(t *testing.T) {
	dsn := sqliteDSN(t)
	execRaw(t, "sqlite", dsn, "CREATE TABLE acc (id INTEGER PRIMARY KEY, amount BIGINT)")
	base := []string{"-driver", "sqlite", "-dsn", dsn}
	if code, out, errOut := runCmd(t, append(base, "-tables", "acc", "-apply")...); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := runCmd(t, append(base, "-raise-floor", "0000000000000001000")...)
	if code != exitOK {
		t.Fatalf("-raise-floor 0000000000000001000: exit %d\n%s\n%s", code, out, errOut)
	}
	first := strings.SplitN(strings.TrimSpace(out), "\n", 2)[0]
	if first != "1000" {
		t.Fatalf("-raise-floor 0000000000000001000 exited 0 with the floor in force %q, want 1000 (the argument was read as octal: tokens 512..999 still write)", first)
	}
	// Hexadecimal and digit separators are no decimal tokens either.
	for _, arg := range []string{"0x7d0", "2_000"} {
		code, out, _ := runCmd(t, append(base, "-raise-floor", arg)...)
		if code == exitOK {
			t.Errorf("-raise-floor %s: exit 0 (%q), want a usage error: not a decimal token", arg, strings.TrimSpace(out))
		}
	}
}
