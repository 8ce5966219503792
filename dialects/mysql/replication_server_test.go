package mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// schema.Check on the test server (MariaDB without a binary log or replica): notes
// only, no replication problem.
func TestReplicationOnServer(t *testing.T) {
	db, err := sql.Open("mysql", testdb.MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reps, err := schema.Check(context.Background(), db, mysql.Dialect, schema.GuardSpec{Table: "nosuch"})
	if err != nil {
		t.Fatal(err)
	}
	r := reps[0].Replication
	if !r.Checked || r.Replicas != 0 || !r.OK() || len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Problem, "no replica") {
		t.Fatalf("replication = %+v", r)
	}
}

// sql_log_bin = 0 reached the session past the wrapper's refusal of SET sql_log_bin:
// on the raw connection, or as a DSN parameter (go-sql-driver/mysql sets it at
// connect). The test account may set it (it has SUPER / BINLOG ADMIN on the test
// server).
func TestSessionSQLLogBin(t *testing.T) {
	fencetest.RunSession(t, fencetest.MySQL(), mysql.Dialect, nil, []fencetest.SessionCase{
		{Name: "raw connection", Raw: true, Change: []string{"SET SESSION sql_log_bin = 0"}, Setting: "sql_log_bin", Reset: []string{"SET SESSION sql_log_bin = 1"}},
		{Name: "DSN sql_log_bin=0", DSN: "sql_log_bin=0", Setting: "sql_log_bin", Reset: []string{"SET SESSION sql_log_bin = 1"}},
	})
}

// The other protected settings a session can read (a red-team finding: the wrapper
// refused them as statements, but go-sql-driver/mysql sends every DSN parameter it does
// not know as SET at connect, and the session check did not read them): a clock set
// by hand (backdated tombstones, purged at once), autocommit off and completion_type
// CHAIN/RELEASE (acknowledged writes never committed), and MariaDB's replication
// filters. The wrapper refuses to SET timestamp, autocommit, server_id, gtid_domain_id
// and gtid_seq_no to any value, so those reset on the raw connection.
func TestSessionProtectedSettings(t *testing.T) {
	const dflt = "SET SESSION timestamp = DEFAULT"
	fencetest.RunSession(t, fencetest.MySQL(), mysql.Dialect, nil, []fencetest.SessionCase{
		{Name: "DSN timestamp", DSN: "timestamp=1000000000", Setting: "timestamp", Reset: []string{dflt}, RawReset: true},
		{Name: "raw timestamp", Raw: true, Change: []string{"SET SESSION timestamp = 1000000000"}, Setting: "timestamp", Reset: []string{dflt}, RawReset: true},
		{Name: "raw timestamp a minute ahead", Raw: true, Change: []string{"SET SESSION timestamp = UNIX_TIMESTAMP(SYSDATE(6)) + 60"}, Setting: "timestamp", Reset: []string{dflt}, RawReset: true},
		{Name: "DSN autocommit=0", DSN: "autocommit=0", Setting: "autocommit", Reset: []string{"SET SESSION autocommit = 1"}, RawReset: true},
		{Name: "raw autocommit=0", Raw: true, Change: []string{"SET SESSION autocommit = 0"}, Setting: "autocommit", Reset: []string{"SET SESSION autocommit = 1"}, RawReset: true},
		{Name: "DSN completion_type=1", DSN: "completion_type=1", Setting: "completion_type", Reset: []string{"SET SESSION completion_type = 0"}},
		{Name: "DSN completion_type=2", DSN: "completion_type=2", Setting: "completion_type", Reset: []string{"SET SESSION completion_type = 0"}},
		{Name: "raw completion_type=CHAIN", Raw: true, Change: []string{"SET SESSION completion_type = CHAIN"}, Setting: "completion_type", Reset: []string{"SET SESSION completion_type = NO_CHAIN"}},
		{Name: "raw completion_type=2", Raw: true, Change: []string{"SET SESSION completion_type = 2"}, Setting: "completion_type", Reset: []string{"SET SESSION completion_type = 0"}},
		{Name: "DSN skip_replication=1", DSN: "skip_replication=1", Setting: "skip_replication", Reset: []string{"SET SESSION skip_replication = 0"}},
		{Name: "raw skip_replication=1", Raw: true, Change: []string{"SET SESSION skip_replication = 1"}, Setting: "skip_replication", Reset: []string{"SET SESSION skip_replication = 0"}},
		{Name: "raw server_id", Raw: true, Change: []string{"SET SESSION server_id = @@GLOBAL.server_id + 1000"}, Setting: "server_id", Reset: []string{"SET SESSION server_id = @@GLOBAL.server_id"}, RawReset: true},
		{Name: "raw gtid_domain_id", Raw: true, Change: []string{"SET SESSION gtid_domain_id = @@GLOBAL.gtid_domain_id + 7"}, Setting: "gtid_domain_id", Reset: []string{"SET SESSION gtid_domain_id = @@GLOBAL.gtid_domain_id"}, RawReset: true},
		{Name: "raw gtid_seq_no", Raw: true, Change: []string{"SET SESSION gtid_seq_no = 5"}, Setting: "gtid_seq_no", Reset: []string{"SET SESSION gtid_seq_no = 0"}, RawReset: true},
	})
}
