package failover

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A hook installed as a symbolic link (ln -s /opt/fencedsql/deploy/failover/… into
// Patroni's or orchestrator's configuration directory) finds raise-floor.sh next to
// its real file, not next to the link (red-team rt41b F2: exit 127, no "NOT raised").
func TestHookRunThroughSymlink(t *testing.T) {
	for _, c := range []struct {
		script string
		args   []string
		env    string
	}{
		{"patroni-on-role-change.sh", []string{"on_role_change", "primary", "shop"}, "FENCEDSQL_FLOOR_DSN=postgres://owner@127.0.0.1:5432/shop"},
		{"post-failover.sh", []string{"db2", "3306"}, "FENCEDSQL_FLOOR_DSN_TEMPLATE=owner@tcp({host}:{port})/shop"},
	} {
		t.Run(c.script, func(t *testing.T) {
			env, dir := hookStubs(t)
			link := filepath.Join(t.TempDir(), c.script)
			target, err := filepath.Abs(filepath.Join(hookDir(t), c.script))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", append([]string{link}, c.args...)...)
			cmd.Env = append(env, c.env)
			out, err := cmd.CombinedOutput()
			rc := 0
			if ee, ok := err.(*exec.ExitError); ok {
				rc = ee.ExitCode()
			}
			_, ran := os.Stat(filepath.Join(dir, "cmdlines"))
			if ran != nil || rc != 0 {
				t.Errorf("through a symlink: exit %d, fencedsql-schema ran: %v, output %q (want the raise)", rc, ran == nil, out)
			}
		})
	}
}

// A hook copied without raise-floor.sh fails the documented way: exit 1 and a "NOT
// raised" line (also sent to syslog), not bash's exit 127 (red-team rt41b F2).
func TestHookWithoutRaiseFloorFailsLoudly(t *testing.T) {
	for _, c := range []struct {
		script string
		args   []string
		env    string
	}{
		{"patroni-on-role-change.sh", []string{"on_role_change", "primary", "shop"}, "FENCEDSQL_FLOOR_DSN=postgres://owner@127.0.0.1:5432/shop"},
		{"post-failover.sh", []string{"db2", "3306"}, "FENCEDSQL_FLOOR_DSN_TEMPLATE=owner@tcp({host}:{port})/shop"},
	} {
		t.Run(c.script, func(t *testing.T) {
			env, _ := hookStubs(t)
			body, err := os.ReadFile(filepath.Join(hookDir(t), c.script))
			if err != nil {
				t.Fatal(err)
			}
			alone := filepath.Join(t.TempDir(), c.script)
			if err := os.WriteFile(alone, body, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", append([]string{alone}, c.args...)...)
			cmd.Env = append(env, c.env)
			out, err := cmd.CombinedOutput()
			rc := 0
			if ee, ok := err.(*exec.ExitError); ok {
				rc = ee.ExitCode()
			}
			if rc != 1 || !strings.Contains(string(out), "NOT raised") {
				t.Errorf("without raise-floor.sh: exit %d, output %q (want exit 1 and NOT raised)", rc, out)
			}
		})
	}
}
