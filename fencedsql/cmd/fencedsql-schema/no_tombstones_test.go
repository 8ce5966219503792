package main

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// red-team rt44b F1: -tombstones=false must only leave the tombstone guard out. hideTombstoner
// (main.go, since replaced by schema.WithoutTombstones) rebuilt the dialect from four interfaces (Guarder, NotNullFixer,
// SideDoorFinder, Privileger) and so also hides SchemaLinter, ReplicationChecker and
// FloorFinder from schema.Check: the declaration lint (an UNLOGGED table), the
// replication report and the lost-floor check were all skipped, and the command said
// OK for a table that the normal check reports. (The replication report's notes —
// "no replica" — are not printed by the command with or without the flag; its
// problems are, and are compared here with the rest.)
func TestNoTombstonesKeepsLintAndReplicationPostgres(t *testing.T) {
	dsn := testdb.Postgres(t)
	execRaw(t, "pgx", dsn, `CREATE UNLOGGED TABLE rt44b_acc (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	args := []string{"-driver", "postgres", "-dsn", dsn, "-tables", "rt44b_acc"}
	code, full, _ := runCmd(t, args...)
	if code != exitProblems || !strings.Contains(full, "UNLOGGED") {
		t.Fatalf("control: the normal check should report the UNLOGGED table: exit %d\n%s", code, full)
	}
	code, out, _ := runCmd(t, append(args, "-tombstones=false")...)
	if code != exitProblems || !strings.Contains(out, "UNLOGGED") {
		t.Errorf("-tombstones=false: exit %d; want the UNLOGGED problem reported as without the flag:\n%s", code, out)
	}
	// Every problem line of the normal check but the tombstone ones (a replication
	// problem among them: "replication: …") is printed with the flag too.
	for _, l := range strings.Split(full, "\n") {
		if strings.HasPrefix(l, "  - ") && !strings.Contains(l, "tombstone") && !strings.Contains(out, l) {
			t.Errorf("-tombstones=false: problem %q of the normal check is gone:\n%s", l, out)
		}
	}
	if !strings.Contains(out, "tombstone guard not checked") {
		t.Errorf("-tombstones=false: no note that the tombstone guard was not checked:\n%s", out)
	}
}

// rt44b F1, the lost floor: a guard installed with -tombstones=false, the floor row deleted
// on a plain connection. The normal check says the floor lost its row; with
// -tombstones=false nothing is said.
func TestNoTombstonesKeepsLostFloorPostgres(t *testing.T) {
	dsn := testdb.Postgres(t)
	execRaw(t, "pgx", dsn, `CREATE TABLE rt44b_acc (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	args := []string{"-driver", "postgres", "-dsn", dsn, "-tables", "rt44b_acc", "-tombstones=false"}
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	execRaw(t, "pgx", dsn, `DELETE FROM fencedsql_floor`)
	code, out, _ := runCmd(t, "-driver", "postgres", "-dsn", dsn, "-tables", "rt44b_acc")
	if code != exitProblems || !strings.Contains(out, "lost their row") {
		t.Fatalf("control: the normal check should report the lost floor row: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd(t, args...)
	if code != exitProblems || !strings.Contains(out, "lost their row") {
		t.Errorf("-tombstones=false: exit %d; want the lost floor row reported:\n%s", code, out)
	}
}

// rt44b F1 on MariaDB: a MyISAM guarded table (non-transactional: a failed fenced
// statement keeps the rows it wrote) is a lint problem; -tombstones=false drops it.
func TestNoTombstonesKeepsLintMariaDB(t *testing.T) {
	dsn := testdb.MySQL(t)
	execRaw(t, "mysql", dsn, `CREATE TABLE rt44b_acc (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=MyISAM`)
	args := []string{"-driver", "mysql", "-dsn", dsn, "-tables", "rt44b_acc"}
	code, out, _ := runCmd(t, args...)
	if code != exitProblems || !strings.Contains(out, "MyISAM") {
		t.Fatalf("control: the normal check should report the MyISAM engine: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd(t, append(args, "-tombstones=false")...)
	if code != exitProblems || !strings.Contains(out, "MyISAM") {
		t.Errorf("-tombstones=false: exit %d; want the engine problem reported as without the flag:\n%s", code, out)
	}
}
