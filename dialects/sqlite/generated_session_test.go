package sqlite_test

import (
	"testing"
	"time"
)

// Generated session compositions through the pool (sqlGen.session): one to three
// set-up statements on the pool connection — TEMP VIEW/TABLE accounts shadowing; TEMP
// TRIGGERs on accounts, main.accounts, ledger or temp objects whose bodies write
// accounts, the floor or the tombstones, or RAISE(IGNORE); ATTACH of the same file;
// PRAGMA recursive_triggers, foreign_keys, ignore_check_constraints,
// defer_foreign_keys, legacy_alter_table, writable_schema, count_changes,
// reverse_unordered_selects; SAVEPOINTs — each with or without the token, then a
// write. Under a stale token (10) and under none, the guarded file stays as it was
// (judgeStale). Under a current one (100), where the plain driver runs the case
// whole, the fenced write is the same or refused typed.
func TestGeneratedSessionCompositions(t *testing.T) {
	k, g, tp := startGen(t, 3*time.Second, genShapes["rowid"])
	i := 0
	for ; k.more(i); i++ {
		c := g.session()
		for _, tok := range []uint64{10, 0} {
			s := runGenCase(t, tp.guarded, true, tok, c, k.ShowLog)
			if bad := judgeStale(tp.base, s, tok); bad != "" {
				t.Errorf("case %d, token %d [%s] pre=%q\n  %q\n  err=%v\n  %s", i, tok, c.kind, c.pre, c.sql, s.err, bad)
			}
		}
		raw := runGenCase(t, tp.bare, false, 0, c, false)
		if raw.err != nil || raw.preFailed {
			continue
		}
		s := runGenCase(t, tp.guarded, true, 100, c, false)
		switch {
		case s.preFailed:
		case s.err != nil && !genTyped(s.err):
			t.Errorf("case %d, current token [%s] pre=%q\n  %q\n  untyped error: %v", i, c.kind, c.pre, c.sql, s.err)
		case s.err == nil && (s.cmp != raw.cmp || s.led != raw.led):
			t.Errorf("case %d, current token [%s] pre=%q\n  %q\n  a different write: plain %s || %s\n  fenced: %s || %s", i, c.kind, c.pre, c.sql, raw.cmp, raw.led, s.cmp, s.led)
		case s.err != nil && k.ShowLog:
			t.Logf("refused with a current token [%s] pre=%q %q: %v", c.kind, c.pre, c.sql, s.err)
		}
	}
	t.Logf("%d session cases in %v", i, time.Since(k.start).Round(time.Millisecond))
}
