package main

import (
	"database/sql"
	"strings"
	"testing"
)

// TestFloorCommands: -max-token and -raise-floor on a guarded SQLite database — the
// registry's tables by default, the floor only raised, bare numbers on stdout (and the
// floor tables raised), usage errors when combined with anything else.
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
	// -raise-floor: the floor in force on the first line, then each floor table raised.
	if got := number("-raise-floor", "100"); got != "100\nmain.fencedsql_floor: 100" {
		t.Fatalf("-raise-floor 100 printed %q", got)
	}
	if got := number("-raise-floor", "50"); got != "100\nmain.fencedsql_floor: 100" {
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

// TestRaiseFloorNoGuard: -raise-floor where no guard reads a floor raises nothing,
// says so and exits 1 (a red-team pass: it created a floor table no guard read and
// printed the raised floor); -max-token still reads the tables.
func TestRaiseFloorNoGuard(t *testing.T) {
	dsn := sqliteDSN(t)
	execRaw(t, "sqlite", dsn, "CREATE TABLE acc (id INTEGER PRIMARY KEY, amount BIGINT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO acc (id, amount, fence_token, version) VALUES (1, 1, 41, 1)")
	base := []string{"-driver", "sqlite", "-dsn", dsn}
	code, out, errOut := runCmd(t, append(base, "-raise-floor", "1000")...)
	if code != exitProblems || out != "" || !strings.Contains(errOut, "no installed guard reads a token floor") {
		t.Fatalf("-raise-floor without a guard: exit %d, stdout %q, stderr %q; want exit 1 and the reason", code, out, errOut)
	}
	if err := execErr("sqlite", dsn, "SELECT floor FROM fencedsql_floor"); err == nil {
		t.Fatal("-raise-floor without a guard created the floor table")
	}
	if code, out, _ := runCmd(t, append(base, "-max-token", "-tables", "acc")...); code != exitOK || strings.TrimSpace(out) != "41" {
		t.Fatalf("-max-token without a guard: exit %d, %q; want 41", code, out)
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
