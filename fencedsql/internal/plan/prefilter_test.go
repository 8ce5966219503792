package plan

import "testing"

// The pre-filter keeps a statement that names no guarded table, guard object or
// protected setting off the tokenizer, without allocating.
func TestProtectPrefilterCheap(t *testing.T) {
	for _, d := range protectDialects {
		rw := newTestRewriter(t, d, Guard("accounts"), Guard("orders"))
		q := `SELECT id, name FROM customers WHERE id = 1 AND note <> 'fencedsql' AND kind = 'session'`
		if rw.mayProtect(q) || rw.mayMention(q) {
			t.Fatalf("%s: pre-filter sends %q to analysis", d.name, q)
		}
		if a := testing.AllocsPerRun(100, func() { _, _ = rw.Rewrite(q, false) }); a != 0 {
			t.Errorf("%s: a pass-through rewrite allocates %v times", d.name, a)
		}
		for _, s := range []string{"DELETE FROM FencedSQL_tombstones", "SET Session_Replication_Role = replica", "select SET_CONFIG($1, $2, false)", "PRAGMA Writable_Schema=1"} {
			if !rw.mayProtect(s) {
				t.Errorf("%s: pre-filter passes %q", d.name, s)
			}
		}
	}
}
