package failover

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// hookDir is deploy/failover, where the hook scripts are.
func hookDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "deploy", "failover")
}

// stubs writes a lockfloor that prints token (or fails when token is "fail") and a
// fencedsql-schema that records its arguments (-dsn-env NAME recorded as -dsn and the
// variable's value: the DSN it was given) and exits with schemaExit (printing the
// floors when 0) — with -max-token it prints STUB_MAX_TOKEN (default 7) or fails
// when that is "fail" — and returns the environment for the scripts and the file the
// arguments land in. lockfloor's arguments land in lock.args (the last call) and
// lock.log (every call, one line each) beside it.
func stubs(t *testing.T, token string, schemaExit int) (env []string, argsFile string) {
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "schema.args")
	lock := "#!/bin/sh\necho \"$*\" > " + filepath.Join(dir, "lock.args") + "\necho \"$*\" >> " + filepath.Join(dir, "lock.log") + "\n"
	if token == "fail" {
		lock += "exit 3\n"
	} else {
		lock += "echo " + token + "\n"
	}
	schema := "#!/bin/bash\nfor x; do if [[ $x == -max-token ]]; then m=${STUB_MAX_TOKEN:-7}; [[ $m != fail ]] || exit 1; echo \"$m\"; exit 0; fi; done\na=()\nwhile (($#)); do if [[ $1 == -dsn-env ]]; then a+=(-dsn \"${!2}\"); shift 2; else a+=(\"$1\"); shift; fi; done\n" +
		"printf '%s\\n' \"${a[@]}\" > " + argsFile + "\n"
	if schemaExit != 0 {
		schema += "exit " + strconv.Itoa(schemaExit) + "\n"
	} else {
		schema += "echo 42; echo 'app.fencedsql_floor: 42'; echo 'billing.fencedsql_floor: 42'\n"
	}
	for name, body := range map[string]string{"lockfloor": lock, "fencedsql-schema": schema} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return append(os.Environ(), "FENCEDSQL_LOCKFLOOR="+filepath.Join(dir, "lockfloor"),
		"FENCEDSQL_SCHEMA="+filepath.Join(dir, "fencedsql-schema"), "FENCEDSQL_FLOOR_ATTEMPTS=1",
		"FENCEDSQL_LOCKFLOOR_ARGS=-backend etcd -endpoints http://127.0.0.1:2379"), argsFile
}

func runHook(t *testing.T, env []string, script string, args ...string) (string, int) {
	cmd := exec.Command("bash", append([]string{filepath.Join(hookDir(t), script)}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func schemaArgs(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return ""
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// The hooks raise the floor to the lock service's last token + 1 on the DSN they are
// given, and fail loudly (exit 1, "NOT raised") when any step fails.
func TestHookScripts(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	const dsn = "postgres://owner:secret@10.0.0.2:5432/shop"
	t.Run("raise", func(t *testing.T) {
		env, args := stubs(t, "41", 0)
		out, rc := runHook(t, append(env, "FENCEDSQL_FLOOR_DSN="+dsn), "raise-floor.sh", "postgres")
		if rc != 0 || schemaArgs(t, args) != "-driver postgres -dsn "+dsn+" -raise-floor 42" {
			t.Fatalf("exit %d, fencedsql-schema got %q; output %s", rc, schemaArgs(t, args), out)
		}
		// The lock service is asked with -failover (lockfloor's margin by default:
		// a lease table that failed over with the database jumps; red-team rt42f F1),
		// then again above the database's highest token (-max-token; rt59c F2).
		if got := lockCalls(t, args); len(got) != 2 || got[0] != "-backend etcd -endpoints http://127.0.0.1:2379 -failover -live" ||
			got[1] != "-backend etcd -endpoints http://127.0.0.1:2379 -failover -live -at-least 7" {
			t.Errorf("lockfloor got %q, want its -failover -live, then with -at-least 7 (the database's -max-token)", got)
		}
		if strings.Contains(out, "secret") {
			t.Errorf("the output shows the DSN's password: %s", out)
		}
		if !strings.Contains(out, "new postgres primary: app.fencedsql_floor: 42 billing.fencedsql_floor: 42\n") {
			t.Errorf("the log does not name the floor tables raised: %s", out)
		}
	})
	for _, c := range []struct {
		name, token string
		schemaExit  int
		schemaRuns  bool
	}{
		{"lock service unreachable", "fail", 0, false},
		{"not a token", "oops", 0, false},
		{"token too large", "18446744073709551615", 0, false},
		{"token 2^63-1 (no floor above it)", "9223372036854775807", 0, false},
		{"token 2^63", "9223372036854775808", 0, false},
		{"token 19 digits above 2^63", "9999999999999999999", 0, false},
		{"database refuses", "41", 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, args := stubs(t, c.token, c.schemaExit)
			out, rc := runHook(t, env, "raise-floor.sh", "mysql", "u:p@tcp(h:3306)/shop")
			if rc != 1 || !strings.Contains(out, "NOT raised") {
				t.Errorf("exit %d (want 1), output %q (want NOT raised)", rc, out)
			}
			if ran := schemaArgs(t, args) != ""; ran != c.schemaRuns {
				t.Errorf("fencedsql-schema ran: %v, want %v", ran, c.schemaRuns)
			}
		})
	}
	// FENCEDSQL_FAILOVER_TOKEN_MARGIN becomes lockfloor's -margin; a value that is not
	// a number of tokens fails loudly before anything runs.
	t.Run("failover margin", func(t *testing.T) {
		env, args := stubs(t, "4294967337", 0)
		out, rc := runHook(t, append(env, "FENCEDSQL_FLOOR_DSN="+dsn, "FENCEDSQL_FAILOVER_TOKEN_MARGIN=0"), "raise-floor.sh", "postgres")
		if rc != 0 || schemaArgs(t, args) != "-driver postgres -dsn "+dsn+" -raise-floor 4294967338" {
			t.Fatalf("exit %d, fencedsql-schema got %q; output %s", rc, schemaArgs(t, args), out)
		}
		if got := lockCalls(t, args); len(got) != 2 || !strings.HasSuffix(got[0], " -failover -live -margin 0") || !strings.HasSuffix(got[1], " -failover -live -margin 0 -at-least 7") {
			t.Errorf("lockfloor got %q, want -failover -live -margin 0 (then with -at-least 7)", got)
		}
		env, args = stubs(t, "41", 0)
		for _, bad := range []string{"-1", "2^32", "12345678901234567890", "0x10"} {
			out, rc := runHook(t, append(env, "FENCEDSQL_FLOOR_DSN="+dsn, "FENCEDSQL_FAILOVER_TOKEN_MARGIN="+bad), "raise-floor.sh", "postgres")
			if rc != 1 || !strings.Contains(out, "NOT raised") || schemaArgs(t, args) != "" {
				t.Errorf("margin %q: exit %d (want 1, NOT raised, nothing run): %s", bad, rc, out)
			}
		}
	})
	// fencedsql-schema's exit 3: the floor is raised, transactions open across the
	// raise have not ended. Still a failure (page someone), but not "NOT raised".
	t.Run("raised, unsettled", func(t *testing.T) {
		env, args := stubs(t, "41", 3)
		out, rc := runHook(t, append(env, "FENCEDSQL_FLOOR_DSN="+dsn), "raise-floor.sh", "postgres")
		if rc != 1 || strings.Contains(out, "NOT raised") || !strings.Contains(out, "WAS raised to 42") || !strings.Contains(out, "have not ended") {
			t.Errorf("exit %d (want 1), output %q (want WAS raised to 42 … have not ended, not NOT raised)", rc, out)
		}
		if schemaArgs(t, args) == "" {
			t.Error("fencedsql-schema did not run")
		}
	})
	t.Run("patroni", func(t *testing.T) {
		env, args := stubs(t, "7", 0)
		env = append(env, "FENCEDSQL_FLOOR_DSN="+dsn)
		if out, rc := runHook(t, env, "patroni-on-role-change.sh", "on_role_change", "replica", "shop"); rc != 0 || schemaArgs(t, args) != "" {
			t.Fatalf("replica: exit %d, fencedsql-schema got %q: %s", rc, schemaArgs(t, args), out)
		}
		for _, role := range []string{"master", "primary"} {
			if out, rc := runHook(t, env, "patroni-on-role-change.sh", "on_role_change", role, "shop"); rc != 0 ||
				schemaArgs(t, args) != "-driver postgres -dsn "+dsn+" -raise-floor 8" {
				t.Fatalf("%s: exit %d, fencedsql-schema got %q: %s", role, rc, schemaArgs(t, args), out)
			}
		}
	})
	t.Run("post-failover", func(t *testing.T) {
		env, args := stubs(t, "99", 0)
		env = append(env, "FENCEDSQL_FLOOR_DSN_TEMPLATE=owner:pw@tcp({host}:{port})/shop")
		if out, rc := runHook(t, env, "post-failover.sh", "db2", "3307"); rc != 0 ||
			schemaArgs(t, args) != "-driver mysql -dsn owner:pw@tcp(db2:3307)/shop -raise-floor 100" {
			t.Fatalf("orchestrator: exit %d, fencedsql-schema got %q: %s", rc, schemaArgs(t, args), out)
		}
		if out, rc := runHook(t, env, "post-failover.sh", "--command=start", "--ssh_user=root", "--new_master_host=db3",
			"--new_master_port=3306"); rc != 0 || schemaArgs(t, args) != "-driver mysql -dsn owner:pw@tcp(db3:3306)/shop -raise-floor 100" {
			t.Fatalf("MHA: exit %d, fencedsql-schema got %q: %s", rc, schemaArgs(t, args), out)
		}
		if out, rc := runHook(t, env, "post-failover.sh", "db4"); rc != 1 || !strings.Contains(out, "NOT raised") {
			t.Fatalf("no port: exit %d (want 1): %s", rc, out)
		}
	})
}

// lockCalls is every lockfloor call the stubs recorded, one string each.
func lockCalls(t *testing.T, args string) []string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(args), "lock.log"))
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// The hook raises the lock service above the last switch's recorded answer
// (FENCEDSQL_FLOOR_AT_LEAST, lockfloor -at-least) and above the database's highest
// token (fencedsql-schema -max-token), then the floor again (red-team rt59c F2): a
// restore or an asynchronous failover can forget a raise of sqllock's token source. A
// recorded answer that is not a token fails before anything runs; a -max-token that
// fails after the first raise is reported as raised but not checked (exit 1, not "NOT
// raised"); FENCEDSQL_FLOOR_MAX_TOKEN=0 skips the second step.
func TestHookScriptRaisesAboveRecordedAnswerAndDatabaseMax(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	const dsn = "postgres://owner:secret@10.0.0.2:5432/shop"
	env, args := stubs(t, "4503603922337792", 0)
	out, rc := runHook(t, append(env, "FENCEDSQL_FLOOR_DSN="+dsn, "FENCEDSQL_FLOOR_AT_LEAST=4503599627370496", "STUB_MAX_TOKEN=1796645046908946"), "raise-floor.sh", "postgres")
	calls := lockCalls(t, args)
	const base = "-backend etcd -endpoints http://127.0.0.1:2379 -failover -live -at-least 4503599627370496"
	if rc != 0 || len(calls) != 2 || calls[0] != base || calls[1] != base+" -at-least 1796645046908946" {
		t.Fatalf("exit %d, lockfloor calls %q; want %q then with -at-least 1796645046908946\n%s", rc, calls, base, out)
	}
	if got := schemaArgs(t, args); got != "-driver postgres -dsn "+dsn+" -raise-floor 4503603922337793" {
		t.Errorf("fencedsql-schema's last call %q", got)
	}
	for _, bad := range []string{"-1", "2^52", "12345678901234567890", "0x10", "1 2"} {
		env, args := stubs(t, "41", 0)
		out, rc := runHook(t, append(env, "FENCEDSQL_FLOOR_DSN="+dsn, "FENCEDSQL_FLOOR_AT_LEAST="+bad), "raise-floor.sh", "postgres")
		if rc != 1 || !strings.Contains(out, "NOT raised") || schemaArgs(t, args) != "" || lockCalls(t, args) != nil {
			t.Errorf("FENCEDSQL_FLOOR_AT_LEAST=%q: exit %d (want 1, NOT raised, nothing run): %s", bad, rc, out)
		}
	}
	env, args = stubs(t, "41", 0)
	out, rc = runHook(t, append(env, "FENCEDSQL_FLOOR_DSN="+dsn, "STUB_MAX_TOKEN=fail"), "raise-floor.sh", "postgres")
	if rc != 1 || strings.Contains(out, "NOT raised") || !strings.Contains(out, "WAS raised to 42") || !strings.Contains(out, "-max-token") ||
		schemaArgs(t, args) != "-driver postgres -dsn "+dsn+" -raise-floor 42" || len(lockCalls(t, args)) != 1 {
		t.Errorf("-max-token failing after the first raise: exit %d (want 1, WAS raised to 42, naming -max-token): %s", rc, out)
	}
	env, args = stubs(t, "41", 0)
	out, rc = runHook(t, append(env, "FENCEDSQL_FLOOR_DSN="+dsn, "FENCEDSQL_FLOOR_MAX_TOKEN=0", "STUB_MAX_TOKEN=fail"), "raise-floor.sh", "postgres")
	if rc != 0 || len(lockCalls(t, args)) != 1 || schemaArgs(t, args) != "-driver postgres -dsn "+dsn+" -raise-floor 42" {
		t.Errorf("FENCEDSQL_FLOOR_MAX_TOKEN=0: exit %d, lockfloor calls %q (want one): %s", rc, lockCalls(t, args), out)
	}
}
