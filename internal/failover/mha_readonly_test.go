package failover

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// MHA calls master_ip_failover_script --command=start BEFORE it sets read_only = 0
// on the new master (MHA::MasterFailover::recover_master: the script, then
// $new_master->disable_read_only()), and deploy/failover/README.md says to raise the
// floor there, before the virtual IP moves. RaiseTokenFloor refuses a read_only server
// (red-team rt41b F4: the hook failed every time, aborting MHA's failover). With
// FENCEDSQL_FLOOR_ALLOW_READ_ONLY=1 post-failover.sh raises on a read_only server that
// has no replication configured (the README's MHA wiring resets it first), and still
// refuses one whose threads are stopped but whose replication is configured (a later
// START SLAVE would undo the raise). This runs the real post-failover.sh with the real
// fencedsql-schema against a promoted MariaDB in MHA's --command=start state.
func TestMHAStartHookRaisesFloorOnReadOnlyNewMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fencedsql-schema and a MariaDB pair: ~50 s")
	}
	env := needEnv(t)
	// Parallel: its own MariaDB pair (fresh directories and ports) and its own build of
	// fencedsql-schema; it waits mostly for them (over a minute on two loaded cores).
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pair := asyncMariaDBPair(t, ctx, env)
	if _, err := Install(ctx, pair.DSN(), myDB); err != nil {
		t.Fatal(err)
	}
	primary, err := sql.Open("mysql", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	if err := schema.RaiseTokenFloor(ctx, primary, myDB.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	var pos string
	if err := primary.QueryRowContext(ctx, `SELECT @@GLOBAL.gtid_binlog_pos`).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	if err := pair.applied(ctx, pair.replica, pos); err != nil {
		t.Fatal(err)
	}
	// The old master dies; MHA has applied the relay logs and stopped replication on
	// the new master; read_only is still ON, slave info not yet reset (Phase 5).
	if err := pair.primary.srv.kill(); err != nil {
		t.Fatal(err)
	}
	newMaster := pair.replica
	err = myDo(ctx, newMaster.dsn(""), func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, `STOP SLAVE`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "fencedsql-schema"), "github.com/fencedsql/fencedsql/fencedsql/cmd/fencedsql-schema")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(bin, "lockfloor"), []byte("#!/bin/sh\necho 99\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tmpl := strings.Replace(newMaster.dsn(mariaDBDatabase), "127.0.0.1:"+strconv.Itoa(newMaster.port), "{host}:{port}", 1)
	cmdEnv := append(os.Environ(), "FENCEDSQL_LOCKFLOOR="+filepath.Join(bin, "lockfloor"),
		"FENCEDSQL_SCHEMA="+filepath.Join(bin, "fencedsql-schema"), "FENCEDSQL_FLOOR_ATTEMPTS=1",
		"FENCEDSQL_LOCKFLOOR_ARGS=-backend etcd -endpoints http://127.0.0.1:2379",
		"FENCEDSQL_FLOOR_DSN_TEMPLATE="+tmpl, "FENCEDSQL_FLOOR_ALLOW_READ_ONLY=1")
	hook := func() (string, int) {
		return runHook(t, cmdEnv, "post-failover.sh", "--command=start", "--ssh_user=root",
			"--orig_master_host=127.0.0.1", "--orig_master_ip=127.0.0.1", "--orig_master_port=1",
			"--new_master_host=127.0.0.1", "--new_master_ip=127.0.0.1", "--new_master_port="+strconv.Itoa(newMaster.port))
	}
	nm, err := sql.Open("mysql", newMaster.dsn(mariaDBDatabase))
	if err != nil {
		t.Fatal(err)
	}
	defer nm.Close()
	var readOnly int
	if err := nm.QueryRowContext(ctx, `SELECT @@GLOBAL.read_only`).Scan(&readOnly); err != nil || readOnly != 1 {
		t.Fatalf("the new master's read_only = %d (%v), want 1 (MHA's state)", readOnly, err)
	}

	// Replication stopped but still configured: refused even with the opt-in.
	out, rc := hook()
	floor, ferr := schema.TokenFloor(ctx, nm, myDB.Dialect)
	if rc != 1 || ferr != nil || floor != 50 || !strings.Contains(out, "NOT raised") || !strings.Contains(out, "replication configured") {
		t.Errorf("replica with stopped threads: hook exit %d, floor %d (%v), want exit 1, NOT raised, floor 50\n%s", rc, floor, ferr, out)
	}
	// The README's MHA wiring: RESET SLAVE ALL on the new master, then the hook.
	if _, err := nm.ExecContext(ctx, `RESET SLAVE ALL`); err != nil {
		t.Fatal(err)
	}
	out, rc = hook()
	floor, ferr = schema.TokenFloor(ctx, nm, myDB.Dialect)
	if rc != 0 || ferr != nil || floor < 100 {
		t.Errorf("MHA --command=start on the new master (replication reset, read_only still ON): hook exit %d, floor %d (%v), want exit 0 and floor 100\n%s", rc, floor, ferr, out)
	}
}
