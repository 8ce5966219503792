package main

import (
	"database/sql"
	"strings"
	"testing"
)

// TestFloorCommands: -max-token and -raise-floor on a guarded SQLite database — the
// registry's tables by default, the floor only raised, bare numbers on stdout, usage
// errors when combined with anything else.
func TestFloorCommands(t *testing.T) {
	dsn := sqliteDSN(t)
	execRaw(t, "sqlite", dsn, "CREATE TABLE acc (id INTEGER PRIMARY KEY, amount BIGINT)")
	base := []string{"-driver", "sqlite", "-dsn", dsn}
	if code, out, errOut := runCmd(t, append(base, "-tables", "acc", "-apply")...); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	execRaw(t, "sqlite", dsn, "INSERT INTO acc (id, amount, fence_token, version) VALUES (1, 1, 41, 1), (2, 1, 7, 1)")
	number := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, append(base, args...)...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errOut)
		}
		return strings.TrimSpace(out)
	}
	if got := number("-max-token"); got != "41" { // from the registry
		t.Fatalf("-max-token = %q, want 41", got)
	}
	if got := number("-max-token", "-tables", "acc"); got != "41" {
		t.Fatalf("-max-token -tables acc = %q, want 41", got)
	}
	if got := number("-raise-floor", "100"); got != "100" {
		t.Fatalf("-raise-floor 100 printed %q", got)
	}
	if got := number("-raise-floor", "50"); got != "100" {
		t.Fatalf("-raise-floor 50 printed %q, want the floor unchanged at 100", got)
	}
	if got := number("-max-token"); got != "99" {
		t.Fatalf("-max-token after the raise = %q, want 99 (floor − 1)", got)
	}
	// The floor is enforced: a plain write with token 60 is refused by the guard.
	if err := execErr("sqlite", dsn, "UPDATE acc SET fence_token = 60, version = 2 WHERE id = 1"); err == nil || !strings.Contains(err.Error(), "token floor") {
		t.Fatalf("plain write below the floor: %v, want the floor's refusal", err)
	}
	for _, bad := range [][]string{
		{"-max-token", "-raise-floor", "5"},
		{"-max-token", "-apply", "-tables", "acc"},
		{"-raise-floor", "5", "-purge-tombstones", "1h", "-tables", "acc"},
	} {
		if code, _, _ := runCmd(t, append(base, bad...)...); code != exitUsage {
			t.Errorf("%q: exit %d, want a usage error", bad, code)
		}
	}
}

// execErr runs one statement through a plain connection and returns its error.
func execErr(driver, dsn, stmt string) error {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(stmt)
	return err
}
