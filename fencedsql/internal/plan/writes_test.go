package plan

import "testing"

// TestMayWriteRows: what a pool refuses while a listed table is missing (fencedsql's
// missing.go) — writes of any table, not DDL, reads or session statements.
func TestMayWriteRows(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("acounts"))
	for sql, want := range map[string]bool{
		"UPDATE accounts SET balance = 1 WHERE id = 1": true,
		"insert into t values (1)":                     true,
		"DELETE FROM t":                                true,
		"REPLACE INTO t VALUES (1)":                    true,
		"TRUNCATE t":                                   true,
		"CALL p()":                                     true,
		"WITH x AS (SELECT 1) UPDATE t SET a = 1":      true,
		"SELECT 1; UPDATE t SET a = 1":                 true,
		"(UPDATE t SET a = 1)":                         true,
		"SELECT * FROM t WHERE id = 1 FOR UPDATE":      false,
		"SELECT 'UPDATE t'":                            false,
		"CREATE TABLE acounts (id INT, ts TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)": false,
		"ALTER TABLE t ADD COLUMN c INT":                                          false,
		"SET sql_mode = 'STRICT_ALL_TABLES'":                                      false,
		"BEGIN":                                                                   false,
		"COMMIT":                                                                  false,
		"SHOW TABLES":                                                             false,
		"":                                                                        false,
	} {
		if got := rw.MayWriteRows(sql); got != want {
			t.Errorf("MayWriteRows(%q) = %v, want %v", sql, got, want)
		}
	}
}
