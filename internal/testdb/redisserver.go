package testdb

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RedisServerBin returns the path of the redis-server binary, for a test that starts
// (and kills, or restarts) a Redis of its own: found in PATH, else in the sbin
// directories scripts/servers.sh also searches (_fsql_find). When there is none the
// test is skipped, or fails when RequireServers() is true (scripts/servers.sh installs
// it for CI).
func RedisServerBin(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/libexec"} {
		p := filepath.Join(d, "redis-server")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if RequireServers() {
		t.Fatalf("testdb: redis-server not found (PATH, /usr/sbin, /usr/local/sbin, /sbin, /usr/libexec) but %s=1: the test needs a Redis of its own (scripts/servers.sh installs it)", EnvRequireServers)
	}
	t.Skip("testdb: redis-server not found (PATH, /usr/sbin, /usr/local/sbin, /sbin, /usr/libexec); the test needs a Redis of its own")
	return ""
}
