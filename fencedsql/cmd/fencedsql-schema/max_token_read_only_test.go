package main

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// -max-token -allow-read-only (schema.MaxTokenReadOnly, red-team rt59c F2): the
// failover hook reads the new primary's highest token where it raises the floor, and
// under MHA that server is still read_only (FENCEDSQL_FLOOR_ALLOW_READ_ONLY=1). On
// MySQL/MariaDB the pair is accepted and reads as -max-token does (a server with no
// replication configured); on PostgreSQL it is a usage error, as with -raise-floor.
func TestMaxTokenAllowReadOnly(t *testing.T) {
	if code, _, errOut := runCmd(t, "-driver", "postgres", "-dsn", "postgres://x@127.0.0.1:1/db", "-max-token", "-allow-read-only"); code != exitUsage ||
		!strings.Contains(errOut, "-allow-read-only") {
		t.Errorf("postgres -max-token -allow-read-only: exit %d, %q; want a usage error", code, errOut)
	}
	dsn := testdb.MySQL(t)
	execRaw(t, "mysql", dsn, `CREATE TABLE mtro_acc (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL DEFAULT 0)`)
	if code, out, errOut := runCmd(t, "-driver", "mysql", "-dsn", dsn, "-tables", "mtro_acc", "-apply"); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	execRaw(t, "mysql", dsn, "INSERT INTO mtro_acc (id, amount, fence_token, version) VALUES (1, 1, 77, 1), (2, 1, 5, 1)")
	code, out, errOut := runCmd(t, "-driver", "mysql", "-dsn", dsn, "-max-token", "-allow-read-only")
	if code != exitOK || strings.TrimSpace(out) != "77" {
		t.Fatalf("mysql -max-token -allow-read-only: exit %d, %q, %q; want 77", code, out, errOut)
	}
}
