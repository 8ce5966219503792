package mysql_test

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestCheckUnderSessionSQLModes (red-team rt61b F1, Check said OK on an unsafe
// table): MariaDB prints GENERATION_EXPRESSION and CHECK_CLAUSE in the reading
// session's sql_mode — under ANSI_QUOTES `fence_token` + 0 reads "fence_token" + 0,
// which the lint lexed as a string, and the period key's CHECK clause no longer
// matched its backquoted spelling. schema.Check over a *sql.DB whose sessions have
// ANSI_QUOTES, ANSI, ORACLE or MSSQL must report exactly what it reports in the
// default mode: a unique key on a generated column computed from the token, one
// through a chain of generated columns from the version, a WITHOUT OVERLAPS period
// key, and the doors (an updatable view, a trigger on another table, a procedure and
// an event writing the table). The lazy check runs the same query (LintSchema).
func TestCheckUnderSessionSQLModes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE ledger (id INT NOT NULL, s DATE NOT NULL, e DATE NOT NULL, PERIOD FOR p(s, e), balance BIGINT NOT NULL DEFAULT 0, "+
			"fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, "+
			"g BIGINT AS (fence_token + 0) PERSISTENT, v1 BIGINT AS (version) VIRTUAL, v2 VARCHAR(64) AS (concat('k', v1 * 2)) PERSISTENT, "+
			"PRIMARY KEY (id, p WITHOUT OVERLAPS), UNIQUE KEY ug (g), UNIQUE KEY uv (v2)) ENGINE=InnoDB")
	fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "ledger"})
	testdb.Exec(t, raw,
		"CREATE VIEW lv AS SELECT * FROM ledger",
		"CREATE TABLE other (x INT) ENGINE=InnoDB",
		"CREATE TRIGGER ot AFTER INSERT ON other FOR EACH ROW UPDATE ledger SET balance = 0",
		"CREATE PROCEDURE pw() UPDATE ledger SET balance = 0",
		"CREATE EVENT ew ON SCHEDULE EVERY 1 DAY DISABLE DO DELETE FROM ledger")
	problems := func(db string) []string {
		t.Helper()
		reports, err := schema.Check(ctx, testdb.Open(t, "mysql", db), mysql.Dialect, schema.GuardSpec{Table: "ledger"})
		if err != nil {
			t.Fatalf("schema.Check: %v", err)
		}
		var got []string
		for _, r := range reports {
			got = append(got, r.Problems...)
		}
		sort.Strings(got)
		return got
	}
	def := problems(dsn)
	joined := strings.Join(def, "\n")
	for _, want := range []string{"unique key ug, through the generated column g", "unique key uv, through the generated column v", "WITHOUT OVERLAPS", "lv", "ot", "pw", "ew"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("set-up: the default-mode Check does not report %q:\n%s", want, joined)
		}
	}
	for _, m := range []string{"STRICT_ALL_TABLES,ANSI_QUOTES", "ANSI", "ORACLE", "MSSQL"} {
		got := problems(dsn + "&sql_mode=" + url.QueryEscape("'"+m+"'"))
		if strings.Join(got, "\n") != joined {
			t.Errorf("schema.Check in sql_mode %s reports %d problems, the default mode %d; want the same:\n%s\n--- default:\n%s", m, len(got), len(def), strings.Join(got, "\n"), joined)
		}
	}
}
