package failover

import (
	"os/exec"
	"testing"
)

// TestHookRaisesAboveLargeTokens (red-team rt31b F9): deploy/failover/raise-floor.sh
// raises the floor above every token a backend can issue, up to 2^63−2 (etcd floors go
// up to 2^62, Redis and memlock tokens to 2^63−2, sqllock's to 2^63−1−10^6; a switch
// "with a margin" is how a service gets there): fencedsql-schema gets token+1, exit 0.
// (Tokens it cannot raise above — 2^63−1 and beyond — are refused: TestHookScripts.)
func TestHookRaisesAboveLargeTokens(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, c := range []struct{ token, floor string }{
		{"999999999999999999", "1000000000000000000"},  // the largest 18-digit token
		{"1000000000000000000", "1000000000000000001"}, // the smallest 19-digit token
		{"2000000000000000000", "2000000000000000001"}, // an etcd floor raised with a margin (≤ 2^62)
		{"9223372036854775806", "9223372036854775807"}, // redislock's/memlock's highest floor
	} {
		t.Run(c.token, func(t *testing.T) {
			env, args := stubs(t, c.token, 0)
			out, rc := runHook(t, env, "raise-floor.sh", "postgres", "postgres://owner:pw@10.0.0.2:5432/shop")
			if want := "-driver postgres -dsn postgres://owner:pw@10.0.0.2:5432/shop -raise-floor " + c.floor; rc != 0 || schemaArgs(t, args) != want {
				t.Fatalf("lock service's LastToken %s: exit %d, fencedsql-schema got %q (want %q); output: %s", c.token, rc, schemaArgs(t, args), want, out)
			}
		})
	}
}
