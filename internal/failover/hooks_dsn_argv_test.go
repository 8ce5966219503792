package failover

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hookStubs writes a lockfloor and a fencedsql-schema that record their whole command
// line (what any local user reads in /proc/<pid>/cmdline or ps) and succeed
// (fencedsql-schema -max-token prints 7).
func hookStubs(t *testing.T) (env []string, dir string) {
	dir = t.TempDir()
	lock := "#!/bin/sh\ncat /proc/$$/cmdline | tr '\\0' ' ' >> " + filepath.Join(dir, "cmdlines") + "\necho 41\n"
	schema := "#!/bin/sh\ncat /proc/$$/cmdline | tr '\\0' ' ' >> " + filepath.Join(dir, "cmdlines") + "\ncase \" $* \" in *\" -max-token \"*) echo 7; exit 0;; esac\necho 42; echo 'app.fencedsql_floor: 42'\n"
	for name, body := range map[string]string{"lockfloor": lock, "fencedsql-schema": schema} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return append(os.Environ(), "FENCEDSQL_LOCKFLOOR="+filepath.Join(dir, "lockfloor"),
		"FENCEDSQL_SCHEMA="+filepath.Join(dir, "fencedsql-schema"), "FENCEDSQL_FLOOR_ATTEMPTS=1",
		"FENCEDSQL_LOCKFLOOR_ARGS=-backend etcd -endpoints http://127.0.0.1:2379"), dir
}

// No hook puts the DSN's password on a command line, where every local user reads it
// (ps, /proc/<pid>/cmdline) for as long as the raise runs (red-team rt41b F1): the
// hooks pass it in the environment (FENCEDSQL_FLOOR_DSN, fencedsql-schema -dsn-env).
// The stubs record their own command lines.
func TestHookDSNPasswordNotOnCommandLine(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc")
	}
	const pw = "Sup3rS3cretPw"
	for _, c := range []struct {
		name, script string
		args, env    []string
	}{
		{"raise-floor postgres", "raise-floor.sh", []string{"postgres"}, []string{"FENCEDSQL_FLOOR_DSN=postgres://owner:" + pw + "@10.0.0.2:5432/shop"}},
		{"raise-floor mysql", "raise-floor.sh", []string{"mysql"}, []string{"FENCEDSQL_FLOOR_DSN=owner:" + pw + "@tcp(10.0.0.2:3306)/shop"}},
		{"patroni", "patroni-on-role-change.sh", []string{"on_role_change", "primary", "shop"},
			[]string{"FENCEDSQL_FLOOR_DSN=postgres://owner:" + pw + "@127.0.0.1:5432/shop"}},
		{"post-failover", "post-failover.sh", []string{"db2", "3306"},
			[]string{"FENCEDSQL_FLOOR_DSN_TEMPLATE=owner:" + pw + "@tcp({host}:{port})/shop"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, dir := hookStubs(t)
			out, rc := runHook(t, append(env, c.env...), c.script, c.args...)
			if rc != 0 {
				t.Fatalf("exit %d: %s", rc, out)
			}
			b, err := os.ReadFile(filepath.Join(dir, "cmdlines"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), pw) || strings.Contains(string(b), " -dsn ") {
				t.Errorf("the DSN's password is on a command line the hook ran (world-readable in ps): %s", b)
			}
			if strings.Contains(out, pw) {
				t.Errorf("the hook's output shows the password: %s", out)
			}
		})
	}
}
