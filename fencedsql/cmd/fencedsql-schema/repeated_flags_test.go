package main

import (
	"strings"
	"testing"
)

// TestRepeatedFlagsRefused: a flag given twice — a value flag (-tables, -raise-floor,
// -dsn) or a bool flag (-apply, -max-token) — is a usage error naming it, and nothing
// is done: no DDL, no floor raised (red-team rt62c F2: `-tables acc -tables led -apply`
// guarded led only and printed "led: OK"; `-raise-floor 1000 -raise-floor 5` raised to
// 5 and exited 0). A repeated -dsn's value is never printed.
func TestRepeatedFlagsRefused(t *testing.T) {
	dsn := sqliteDSN(t)
	execRaw(t, "sqlite", dsn,
		"CREATE TABLE acc (id INTEGER PRIMARY KEY, amount BIGINT)",
		"CREATE TABLE led (id INTEGER PRIMARY KEY, amount BIGINT)")
	base := []string{"-driver", "sqlite", "-dsn", dsn}
	refused := func(flag string, args ...string) {
		t.Helper()
		code, out, errOut := runCmd(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "flag -"+flag+" given more than once") || strings.Contains(out, "OK") {
			t.Errorf("fencedsql-schema %q: exit %d, stdout %q, stderr %q; want exit 2 naming -%s, nothing done", args, code, out, errOut, flag)
		}
		if strings.Contains(errOut, "S3cr3t") {
			t.Errorf("fencedsql-schema %q: stderr shows the repeated DSN's password: %q", args, errOut)
		}
	}
	refused("tables", append(base, "-tables", "acc", "-tables", "led", "-apply")...)
	refused("apply", append(base, "-tables", "acc,led", "-apply", "-apply")...)
	refused("dsn", append(base, "-dsn", "postgres://u:S3cr3t@h/db", "-tables", "acc", "-apply")...)
	if code, out, _ := runCmd(t, append(base, "-tables", "acc,led", "-print")...); code != exitProblems || !strings.Contains(out, "acc") || !strings.Contains(out, "led") {
		t.Fatalf("after the refused runs: -print exit %d, want both tables still unfit (no DDL ran):\n%s", code, out)
	}

	if code, out, errOut := runCmd(t, append(base, "-tables", "acc,led", "-apply")...); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := runCmd(t, append(base, "-raise-floor", "100")...); code != exitOK || !strings.HasPrefix(out, "100\n") {
		t.Fatalf("-raise-floor 100: exit %d, %q %q", code, out, errOut)
	}
	refused("raise-floor", append(base, "-raise-floor", "1000", "-raise-floor", "5")...)
	refused("max-token", append(base, "-max-token", "-max-token")...)
	refused("tables", append(base, "-max-token", "-tables", "acc", "-tables", "led")...)
	if code, out, errOut := runCmd(t, append(base, "-max-token")...); code != exitOK || out != "99\n" {
		t.Fatalf("-max-token after the refused raise: exit %d, %q %q; want 99 (the floor 100 unchanged)", code, out, errOut)
	}
}
