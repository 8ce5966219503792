package failover

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Patroni runs `pg_ctl promote -W` (no wait) and calls on_role_change right away
// (patroni/postgresql/__init__.py, Postgresql.promote: call_nowait(ON_ROLE_CHANGE)
// before _wait_promote), so the hook runs while the standby is still in recovery —
// replaying what it received, which is long exactly when it lagged. fencedsql-schema
// refuses (ErrNotPrimary) until the promotion ends; the hook retries for up to
// FENCEDSQL_PROMOTE_WAIT seconds (default 60) instead of giving up after its 5
// attempts (red-team rt41b F3: the new primary kept the old floor). The stub
// fencedsql-schema answers "not a writable primary" for the first 8 seconds.
func TestPatroniHookWaitsForPromotion(t *testing.T) {
	if testing.Short() {
		t.Skip("waits ~10 s")
	}
	env, dir := hookStubs(t)
	schema := "#!/bin/bash\nstart=" + filepath.Join(dir, "start") + "\n" +
		"[[ -f $start ]] || date +%s > $start\n" +
		"if (( $(date +%s) - $(cat $start) < 8 )); then echo 'fencedsql-schema: raise-floor: the server is a replica or read-only' >&2; exit 1; fi\n" +
		"case \" $* \" in *\" -max-token \"*) echo 7; exit 0;; esac\n" +
		"echo raised >> " + filepath.Join(dir, "raised") + "\necho 42; echo 'public.fencedsql_floor: 42'\n"
	if err := os.WriteFile(filepath.Join(dir, "fencedsql-schema"), []byte(schema), 0o755); err != nil {
		t.Fatal(err)
	}
	// The default number of attempts, as deployed.
	var e2 []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "FENCEDSQL_FLOOR_ATTEMPTS=") {
			e2 = append(e2, kv)
		}
	}
	e2 = append(e2, "FENCEDSQL_FLOOR_DSN=postgres://owner@127.0.0.1:5432/shop")
	out, rc := runHook(t, e2, "patroni-on-role-change.sh", "on_role_change", "primary", "shop")
	if _, err := os.Stat(filepath.Join(dir, "raised")); rc != 0 || err != nil {
		t.Errorf("promotion finishing 8 s after on_role_change: hook exit %d, raised: %v (want the floor raised once the node is writable): %s", rc, err == nil, out)
	}
}
