package plan

import "testing"

// TestEnableTriggerOrRuleRefused: DDL that switches on a disabled trigger or rule of
// any relation is refused on a pool with guarded tables, with or without WithDDL, as
// DISABLE TRIGGER is (red-team rt44d F1: a stale holder switched a disabled trigger
// writing the guarded table on through the pool, then fired it). ENABLE ROW LEVEL
// SECURITY, DISABLE RULE and MySQL's ENABLE KEYS switch on no code and pass.
func TestEnableTriggerOrRuleRefused(t *testing.T) {
	refused := []struct {
		d   testDialect
		sql string
	}{
		{pgTest, "ALTER TABLE other ENABLE TRIGGER t"},
		{pgTest, "ALTER TABLE other ENABLE TRIGGER ALL"},
		{pgTest, "alter table if exists only other enable trigger user"},
		{pgTest, `ALTER TABLE "other" ENABLE /* c */ TRIGGER "T"`},
		{pgTest, "ALTER FOREIGN TABLE other ENABLE TRIGGER t"},
		{pgTest, "ALTER TABLE other ENABLE RULE r"},
		{pgTest, "ALTER TABLE other ENABLE REPLICA RULE r"},
		{pgTest, "ALTER TABLE other ENABLE ALWAYS RULE r"},
		{pgTest, "ALTER TABLE other ADD COLUMN y int, ENABLE TRIGGER t"},
		{pgTest, "ALTER EVENT TRIGGER e ENABLE"},
		{pgTest, "ALTER EVENT TRIGGER e ENABLE;"},
		{pgTest, "ALTER EVENT TRIGGER e ENABLE ALWAYS"},
		{pgTest, "SELECT 1; ALTER TABLE other ENABLE TRIGGER t"},
	}
	for _, c := range refused {
		for name, opts := range protectOptions {
			rw := newTestRewriter(t, c.d, opts...)
			if p, err := rw.Rewrite(c.sql, false); !isRefusal(err) {
				t.Errorf("%s, %s: rewrite(%q) = %v, %v; want ErrUnsupported", c.d.name, name, c.sql, p, err)
			}
		}
	}
	passed := []struct {
		d   testDialect
		sql string
	}{
		{pgTest, "ALTER TABLE other ENABLE ROW LEVEL SECURITY"},
		{pgTest, "ALTER TABLE other DISABLE RULE r"},
		{mysqlTest, "ALTER TABLE other ENABLE KEYS"},
	}
	for _, c := range passed {
		rw := newTestRewriter(t, c.d, Guard("accounts"), WithDDL(true))
		if p, err := rw.Rewrite(c.sql, false); err != nil {
			t.Errorf("%s: rewrite(%q) = %v, %v; want it passed", c.d.name, c.sql, p, err)
		}
	}
}
