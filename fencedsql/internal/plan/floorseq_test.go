package plan

import "testing"

// The guards keep a copy of the token floor in a PostgreSQL sequence with the reserved
// prefix: setval could lower it (a stale token would then write below the floor), and
// nextval raise it. The sequence of either call must be a literal that does not mention
// the prefix, or pg_get_serial_sequence of such literals.
func TestSequenceCallsOnTheFloorRefused(t *testing.T) {
	for _, in := range []string{
		"SELECT setval('fencedsql_floor_seq', 0)",
		"SELECT pg_catalog.setval('public.fencedsql_floor_seq', 0, true)",
		"SELECT setval('FENCEDSQL_FLOOR_SEQ'::regclass, 0)",
		`SELECT setval('"fencedsql_floor_seq"', 0)`,
		"SELECT setval('fencedsq' || 'l_floor_seq', 0)",
		"SELECT setval(16999, 0)",
		"SELECT setval(c.oid, 0) FROM pg_class c WHERE c.relname = 'fencedsq' || 'l_floor_seq'",
		"SELECT SETVAL(x, 0) FROM (VALUES ('fencedsq'||'l_floor_seq')) v(x)",
		"SELECT setval(E'fencedsq\\x6c_floor_seq', 0)",
		"SELECT setval(U&'fencedsq\\006c_floor_seq', 0)",
		"SELECT setval($1, 0)",
		"SELECT nextval('fencedsql_floor_seq')",
		"SELECT nextval(lower('FENCEDSQL_FLOOR_SEQ'))",
		"SELECT setval(pg_get_serial_sequence('fencedsql_floor', 'id'), 0)",
		"SELECT setval(other.pg_get_serial_sequence('t', 'id'), 0)",
		"SELECT setval(pg_get_serial_sequence(t, 'id'), 0)",
		"INSERT INTO other (id) VALUES (setval('fencedsql_floor_seq', 0))",
		"SELECT 1; SELECT setval('fencedsql_floor_seq', 0)",
		"PREPARE p AS SELECT setval(c.oid, 0) FROM pg_class c",
		// An all-digit string is an OID to regclass (found by a red-team pass).
		"SELECT setval('36205', 0)",
		"SELECT pg_catalog.setval('036205'::regclass, 1, true)",
		"SELECT * FROM setval('36205', 2)",
		`SELECT "setval"('36205', 6)`,
		"WITH s AS (SELECT setval('36205', 7)) SELECT * FROM s",
		"SELECT setval('', 0)",
		// A schema renamed and re-created could hold a planted copy named as the
		// guards name theirs (a serial column's generated sequence).
		"ALTER SCHEMA public RENAME TO app",
		"alter schema \"public\" rename to app",
	} {
		_, err := newTestRewriter(t, pgTest, Guard("accounts")).Rewrite(in, false)
		if !isRefusal(err) {
			t.Errorf("%q: err = %v, want it refused", in, err)
		}
	}
}

func TestSequenceCallsPass(t *testing.T) {
	for _, c := range []struct {
		d  testDialect
		in string
	}{
		{pgTest, "SELECT nextval('orders_id_seq')"},
		{pgTest, "SELECT nextval('shop.orders_id_seq'::regclass)"},
		{pgTest, "INSERT INTO other (id, v) VALUES (nextval('other_id_seq'), 1)"},
		{pgTest, "SELECT setval('orders_id_seq', 42, true)"},
		{pgTest, `SELECT setval(pg_get_serial_sequence('"orders"', 'id'), coalesce(max("id"), 1), max("id") IS NOT null) FROM "orders"`},
		{pgTest, "SELECT pg_catalog.setval(pg_catalog.pg_get_serial_sequence('orders', 'id'), 1)"},
		{pgTest, "SELECT currval('orders_id_seq'), lastval()"},
		{pgTest, "SELECT last_value FROM fencedsql_floor_seq"},
		{pgTest, "SELECT setval_count FROM other"},
		{pgTest, "SELECT setval('orders_2024_seq', 1)"},
		{pgTest, "ALTER SCHEMA app OWNER TO admin"},
		// MariaDB's sequences are not the guards' (their names are judged as names).
		{mysqlTest, "SELECT NEXTVAL(orders_seq)"},
		{mysqlTest, "SELECT SETVAL(orders_seq, 5)"},
	} {
		p, err := newTestRewriter(t, c.d, Guard("accounts")).Rewrite(c.in, false)
		if err != nil || p.Kind != KindPass {
			t.Errorf("%s: %q: plan %v, err = %v, want it passed", c.d.name, c.in, p, err)
		}
	}
}
