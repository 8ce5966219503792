package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRoutineCannotSetReplicationSettings pins the server behaviour the session check
// relies on (docs/design.md, "Session settings are verified"): the check runs again
// only after statements the planner flags, and a stored function or trigger, which a
// plain SELECT or write may run unseen, cannot change the protected settings that
// keep writes out of the binary log or off the replicas, nor autocommit. (timestamp
// can be set there and is harmless since tombstones are dated by SYSDATE:
// TestTombstoneNotBackdatedBySessionClock; completion_type can, and the wrapper's COMMIT
// and ROLLBACK override it: TestCompletionTypeSetByRoutine; server_id can, an open
// finding.)
func TestRoutineCannotSetReplicationSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.Open(t, "mysql", testdb.MySQL(t))
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE FUNCTION set_autocommit() RETURNS INT BEGIN SET autocommit = 0; RETURN 1; END"); err == nil {
		t.Errorf("a stored function setting autocommit was created (%s)", version)
	}
	for _, set := range []string{"sql_log_bin = 0", "skip_replication = 1", "gtid_domain_id = 7", "gtid_seq_no = 7"} {
		name := "set_" + set[:len(set)-4]
		if _, err := db.ExecContext(ctx, "CREATE FUNCTION "+name+"() RETURNS INT BEGIN SET "+set+"; RETURN 1; END"); err != nil {
			continue // refused at CREATE (MySQL lacks the MariaDB-only variables)
		}
		var one int
		if err := db.QueryRowContext(ctx, "SELECT "+name+"()").Scan(&one); err == nil {
			t.Errorf("SET %s inside a stored function was allowed (%s): the session check would not see it", set, version)
		}
	}
}
