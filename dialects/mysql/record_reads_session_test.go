package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// recordReadTables makes rr_a and rr_b (fit, row 1 at token 20), recorded as guarded
// in the registry (register) or by the guard's triggers only (installed from
// schema.Check's Fix), listed nowhere else.
func recordReadTables(t *testing.T, register bool) (string, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE rr_a (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE rr_b (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO rr_a VALUES (1, 100, 20, 1)",
		"INSERT INTO rr_b VALUES (1, 100, 20, 1)")
	specs := []schema.GuardSpec{{Table: "rr_a"}, {Table: "rr_b"}}
	if register {
		if err := schema.RegisterTables(ctx, raw, mysql.Dialect, specs...); err != nil {
			t.Fatal(err)
		}
		return dsn, raw
	}
	reports, err := schema.Check(ctx, raw, mysql.Dialect, specs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		for _, q := range r.Fix {
			if _, err := raw.ExecContext(ctx, q); err != nil {
				t.Fatalf("fix %q: %v", q, err)
			}
		}
	}
	return dsn, raw
}

// wantRecordsRefused asserts that a stale write (token 5 against the row's 20) to
// every table through a pool opened on dsn fails with a *SessionError with Records
// naming setting, and that no row changed.
func wantRecordsRefused(t *testing.T, raw *sql.DB, dsn, setting string, tables ...string) {
	t.Helper()
	ctx := context.Background()
	db := testdb.Open(t, "fenced-mysql", dsn)
	for _, tb := range tables {
		_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE "+tb+" SET balance = 666, version = version + 1 WHERE id = 1")
		var se *fencedsql.SessionError
		if !errors.As(err, &se) || !se.Records || se.Setting != setting || !errors.Is(err, fencedsql.ErrSchema) {
			t.Errorf("stale write to %s: err = %v; want a *SessionError with Records for %s", tb, err, setting)
		}
		var bal int64
		if err := raw.QueryRow("SELECT balance FROM " + tb + " WHERE id = 1").Scan(&bal); err != nil {
			t.Fatal(err)
		}
		if bal != 100 {
			t.Errorf("%s: balance now %d; want 100 (the stale write refused)", tb, bal)
		}
	}
}

// sql_select_limit in the DSN (go-sql-driver/mysql SETs a parameter it does not know
// at connect) capped the pool's own record reads: with 1 only the first registered
// table was guarded and a stale write to the second landed; with 0 the pool guarded
// nothing; the guard-trigger record was capped alike (red-team rt40b F3). The pool's
// first connection is now refused before it reads the records, whatever the schema
// check says.
func TestSelectLimitInDSNRefusedBeforeRecordReads(t *testing.T) {
	for _, c := range []struct {
		name     string
		register bool
		params   string
	}{
		{"registry, limit 1", true, "&sql_select_limit=1"},
		{"registry, limit 0", true, "&sql_select_limit=0"},
		{"guard triggers, limit 1", false, "&sql_select_limit=1"},
		{"registry, limit 1, schema check off", true, "&sql_select_limit=1&fenced_schema_check=false"},
		{"registry, limit 2^32-2", true, "&sql_select_limit=4294967294"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn, raw := recordReadTables(t, c.register)
			wantRecordsRefused(t, raw, dsn+c.params, "sql_select_limit", "rr_a", "rr_b")
		})
	}
}

// character_set_results other than UTF-8 or binary converted the registry's names:
// under latin1 rt_café came back as "rt_caf\xe9", a guard matching no statement, and
// a stale write to the real table landed (red-team rt40b F4). Refused before the
// record reads; utf8mb4, binary and NULL (no conversion) read the name right and
// the stale write is fenced.
func TestResultsCharsetInDSNRefusedBeforeRecordReads(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE rr_café (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO rr_café VALUES (1, 100, 20, 1)")
	if err := schema.RegisterTables(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "rr_café"}); err != nil {
		t.Fatal(err)
	}
	for _, cs := range []string{"latin1", "cp1251", "koi8r", "ascii", "utf16"} {
		t.Run(cs, func(t *testing.T) {
			wantRecordsRefused(t, raw, dsn+"&character_set_results="+cs, "character_set_results", "rr_café")
		})
	}
	for _, cs := range []string{"utf8mb4", "binary", "NULL"} {
		t.Run(cs, func(t *testing.T) {
			db := testdb.Open(t, "fenced-mysql", dsn+"&character_set_results="+cs)
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE rr_café SET balance = 666 WHERE id = 1")
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale write under character_set_results=%s: err = %v; want ErrFenced", cs, err)
			}
		})
	}
}
