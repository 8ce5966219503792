package deploy

import (
	"regexp"
	"strings"
	"testing"
)

// TestLockServiceSwitchUpdatesFailoverHooks (red-team rt42c F6): after a switch to
// another lock service, a failover hook still configured for the old, retired one
// would raise the floor from the retired service's last token, below every lease of
// the new one. The switch procedure (README "Switching or rebuilding the lock service",
// deploy/failover/README.md) must tell the operator to point the hooks'
// FENCEDSQL_LOCKFLOOR_ARGS at the new service, and raise-floor.sh must read the service
// with lockfloor -live (-failover -live), which refuses a retired one.
func TestLockServiceSwitchUpdatesFailoverHooks(t *testing.T) {
	readme := read(t, "../README.md")
	docs := map[string]string{
		`README.md "Switching or rebuilding the lock service"`: section(t, readme, "\n### Switching or rebuilding the lock service", "\n## "),
		"deploy/failover/README.md":                            read(t, "failover/README.md"),
	}
	space := regexp.MustCompile(`\s+`)
	for name, text := range docs {
		text = space.ReplaceAllString(text, " ")
		for _, want := range []string{"FENCEDSQL_LOCKFLOOR_ARGS", "restore runbooks", "-live"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not mention %q: the switch must point the failover hooks (and restore runbooks) at the new service", name, want)
			}
		}
	}
	script := read(t, "failover/raise-floor.sh")
	if !regexp.MustCompile(`"\$\{lockargs\[@\]\}" -failover -live[ )]`).MatchString(script) {
		t.Error("raise-floor.sh does not read the lock service with lockfloor -failover -live: a hook configured for a retired service would raise the floor from its last token")
	}
}
