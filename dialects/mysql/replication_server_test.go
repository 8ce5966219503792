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
