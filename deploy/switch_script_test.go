package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// switchScript is the ```sh block of README "Switching or rebuilding the lock service":
// the documented switch procedure, run as written.
func switchScript(t *testing.T) string {
	t.Helper()
	sec := section(t, read(t, "../README.md"), "\n### Switching or rebuilding the lock service", "\n## ")
	i := strings.Index(sec, "```sh\n")
	if i < 0 {
		t.Fatal("no ```sh block in README's switch section")
	}
	rest := sec[i+len("```sh\n"):]
	j := strings.Index(rest, "```")
	if j < 0 {
		t.Fatal("unterminated ```sh block in README's switch section")
	}
	return rest[:j]
}

// Stubs of the two tools for the switch script: the database accepted tokens up to
// 100; the old Redis service issued up to 500; the new etcd service answers what it was
// raised to. The step named by $FAIL exits 1 (as the tools fail: lockfloor -retire's
// "counter lost", an unreachable service), the one named by $GARBAGE prints something
// that is not a token and exits 0. Every run is logged with its arguments; the DSN and
// the Redis address come from the variables -dsn-env / -addr-env name.
const (
	stubSchema = `
echo "fencedsql-schema $*" >> "$LOG"
step=""; prev=""; floor=""
for a in "$@"; do
  case $a in -max-token) step=-max-token;; esac
  if [[ $prev == -raise-floor ]]; then step=-raise-floor; floor=$a; fi
  if [[ $prev == -dsn-env ]]; then [[ ${!a:-} == "$ADMIN_DSN" ]] || { echo "no DSN in \$$a" >&2; exit 2; }; fi
  prev=$a
done
[[ $step == "${FAIL:-}" ]] && { echo "fencedsql-schema: failed" >&2; exit 1; }
[[ $step == "${GARBAGE:-}" ]] && { echo "-"; exit 0; }
case $step in
  -max-token) echo 100;;
  -raise-floor) echo "raise-floor $floor" >> "$LOG"; echo "$floor";;
  *) exit 2;;
esac
`
	stubLockfloor = `
echo "lockfloor $*" >> "$LOG"
state="$LOG.etcd"; step=""; prev=""; to=""
for a in "$@"; do
  case $a in -retire|-show) step=$a;; esac
  if [[ $prev == -raise ]]; then step=-raise; to=$a; fi
  if [[ $prev == -addr-env ]]; then [[ -n ${!a:-} ]] || { echo "no address in \$$a" >&2; exit 2; }; fi
  prev=$a
done
[[ $step == "${FAIL:-}" ]] && { echo "lockfloor: $step: counter lost" >&2; exit 1; }
[[ $step == "${GARBAGE:-}" ]] && { echo "unknown"; exit 0; }
case $step in
  -retire) echo "retired" >> "$LOG"; echo 500;;
  -show) cat "$state" 2>/dev/null || echo 0;;
  -raise) echo "$to" > "$state"; echo "raise $to" >> "$LOG"; echo "$to";;
  *) exit 2;;
esac
`
)

// runSwitchScript runs the README's switch script with bash, the tools stubbed; it
// returns the script's output, the stubs' log and the script's error.
func runSwitchScript(t *testing.T, env ...string) (string, string, error) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"fencedsql-schema": stubSchema, "lockfloor": stubLockfloor} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/usr/bin/env bash\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(dir, "log")
	cmd := exec.Command("bash", "-c", switchScript(t))
	cmd.Env = append(os.Environ(), append([]string{"PATH=" + dir + ":" + os.Getenv("PATH"), "LOG=" + log,
		"ADMIN_DSN=postgres://admin:S3cr3t@db/shop", "OLD_REDIS=redis://:S3cr3t@127.0.0.1:1/0", "ETCD=http://127.0.0.1:2"}, env...)...)
	out, err := cmd.CombinedOutput()
	got, _ := os.ReadFile(log)
	return string(out), string(got), err
}

// TestSwitchScriptStopsAtFailedStep (red-team rt62c F3): README's switch procedure, run
// as the script it is, stops with a non-zero status at a step that fails or answers
// something that is not a token, and raises nothing after it — before, a failed
// -retire left OLD empty (read as 0: the old service un-retired, its leases above the
// database's highest token writing) and a failed -show raised the floor to 1, and the
// script ended with status 0. A good run retires, raises and prints the answer, and
// the DSN and the Redis address never appear in a command's arguments.
func TestSwitchScriptStopsAtFailedStep(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	out, log, err := runSwitchScript(t)
	if err != nil || !strings.Contains(out, "FENCEDSQL_FLOOR_AT_LEAST=500") ||
		!strings.Contains(log, "retired") || !strings.Contains(log, "raise 500") || !strings.Contains(log, "raise-floor 501") {
		t.Fatalf("the switch script's good run: %v, output %q, steps:\n%s\nwant retired, raise 500, raise-floor 501, FENCEDSQL_FLOOR_AT_LEAST=500", err, out, log)
	}
	if strings.Contains(log, "S3cr3t") {
		t.Errorf("the switch script passes a password in a command's arguments (ps shows them):\n%s", log)
	}
	// A step that fails, or answers something that is not a token: nothing after it.
	for _, c := range []struct {
		env   string
		after []string // steps that must not have run
	}{
		{"FAIL=-max-token", []string{"retired", "raise", "FLOOR_AT_LEAST"}},
		{"FAIL=-retire", []string{"raise", "FLOOR_AT_LEAST"}},
		{"FAIL=-raise", []string{"raise-floor", "FLOOR_AT_LEAST"}},
		{"FAIL=-show", []string{"raise-floor", "FLOOR_AT_LEAST"}},
		{"FAIL=-raise-floor", []string{"FLOOR_AT_LEAST"}},
		{"GARBAGE=-max-token", []string{"retired", "raise", "FLOOR_AT_LEAST"}},
		{"GARBAGE=-retire", []string{"raise", "FLOOR_AT_LEAST"}},
		{"GARBAGE=-show", []string{"raise-floor", "FLOOR_AT_LEAST"}},
	} {
		out, log, err := runSwitchScript(t, c.env)
		if err == nil {
			t.Errorf("%s: the switch script ended with status 0, output %q, steps:\n%s", c.env, out, log)
		}
		for _, s := range c.after {
			if strings.Contains(log, s) || strings.Contains(out, s) {
				t.Errorf("%s: the switch script went on to %q after the step failed; output %q, steps:\n%s", c.env, s, out, log)
			}
		}
	}
}

// TestSwitchScriptTokenRuleIsRaiseFloors: the switch script checks its numbers by the
// rule raise-floor.sh checks the failover hook's with (is_token: 0 to 2^63−2, so that
// token + 1 is a floor), spelled the same: one rule, not two that drift apart.
func TestSwitchScriptTokenRuleIsRaiseFloors(t *testing.T) {
	rule := regexp.MustCompile(`(?m)^max=[0-9]+\nis_token\(\) \{\n[^\n]*\n\}$`)
	readme, hook := rule.FindString(switchScript(t)), rule.FindString(read(t, "failover/raise-floor.sh"))
	if readme == "" || readme != hook {
		t.Errorf("README's switch script checks tokens with\n%s\nraise-floor.sh with\n%s\nwant the same max= and is_token", readme, hook)
	}
}
