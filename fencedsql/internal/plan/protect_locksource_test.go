package plan

import "testing"

// The SQL lock backend's token source (sequence fencedsql_locks…_token_seq, counter
// table fencedsql_locks…_token) set back through the application's fenced pool made
// every later grant draw tokens below those the database had accepted (a red-team
// pass): any statement but a read of it is refused, on every option set; its other
// objects stay writable, and reads of the token source (locking ones included) pass.
func TestLockTokenSourceProtected(t *testing.T) {
	refused := []reachCase{
		{pgTest, "SELECT setval('fencedsql_locks_token_seq', 1)"},
		{pgTest, "SELECT setval('fencedsql_locks_token_seq'::regclass, 1, false)"},
		{pgTest, `SELECT pg_catalog.setval('public."fencedsql_locks_token_seq"', 1)`},
		{pgTest, "SELECT setval('jobs.FENCEDSQL_LOCKS_JOBS_TOKEN_SEQ', 1)"},
		{pgTest, "ALTER SEQUENCE fencedsql_locks_token_seq RESTART"},
		{pgTest, "ALTER SEQUENCE public.fencedsql_locks_token_seq RESTART WITH 1"},
		{pgTest, "DROP SEQUENCE fencedsql_locks_token_seq CASCADE"},
		{pgTest, `DROP SEQUENCE "fencedsql_locks_token_seq"`},
		{mysqlTest, "UPDATE fencedsql_locks_token SET v = 0 WHERE id = 1"},
		{mysqlTest, "UPDATE `fencedsql_locks_token` SET v = v - 1000"},
		{mysqlTest, "REPLACE INTO fencedsql_locks_token (id, v) VALUES (1, 0)"},
		{mysqlTest, "INSERT INTO fencedsql_locks_token (id, v) VALUES (1, 0) ON DUPLICATE KEY UPDATE v = 0"},
		{mysqlTest, "TRUNCATE TABLE fencedsql_locks_token"},
		{mysqlTest, "DELETE FROM fencedsql_locks_token"},
		{mysqlTest, "DROP TABLE fencedsql_locks_token"},
		{mysqlTest, "ALTER TABLE fencedsql_locks_token AUTO_INCREMENT = 1"},
		{mysqlTest, "WITH x AS (SELECT 1) UPDATE fencedsql_locks_token SET v = 0"},
		{mysqlTest, "SELECT 0 INTO @v FROM fencedsql_locks_token"},
	}
	for _, c := range refused {
		for optName, opts := range protectOptions {
			rw := newTestRewriter(t, c.d, opts...)
			if p, err := rw.Rewrite(c.in, false); !isRefusal(err) {
				t.Errorf("%s %s: rewrite(%q) = %v, %v; want ErrUnsupported", c.d.name, optName, c.in, p, err)
			}
		}
	}
	passes := []reachCase{
		{pgTest, "SELECT last_value FROM fencedsql_locks_token_seq"},
		{pgTest, "SELECT o_token FROM fencedsql_locks_grant_v2($1, $2, $3, $4)"},
		{pgTest, "UPDATE fencedsql_locks SET expires_at = now() WHERE lock_key = $1"},
		{pgTest, "SELECT setval('orders_id_seq', 1)"},
		{mysqlTest, "SELECT v FROM fencedsql_locks_token WHERE id = 1 LOCK IN SHARE MODE"},
		{mysqlTest, "SELECT v FROM fencedsql_locks_token WHERE id = 1 FOR UPDATE"},
		{mysqlTest, "DELETE FROM fencedsql_locks WHERE lock_key = ? AND owner = ?"},
	}
	for _, c := range passes {
		rw := newTestRewriter(t, c.d, Guard("accounts"))
		if _, err := rw.Rewrite(c.in, false); err != nil {
			t.Errorf("%s: rewrite(%q) = %v; want it sent", c.d.name, c.in, err)
		}
	}
}
