package sqlite_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// Generated writes of the guarded accounts (generated_sql_test.go) through the fenced
// pool, on every table shape. Under a stale token (10) and under none, the rows, the
// tombstones and the floor stay as they were (judgeStale), and every refusal is typed.
// Under a current token (100), against the plain driver on an unguarded copy, the
// write is the same (rows, keys, ledger), every new row is stamped with the token, and
// a refusal is typed (the documented ErrUnsupported ones: the OR clauses, REPLACE,
// WITH … DELETE, DELETE … RETURNING outside a transaction, INSERT … SELECT, a row
// assignment of version; logged with FENCEDSQL_SCHEDULES_LOG=1). A case the plain
// driver refuses too is skipped.
func TestGeneratedWritesThroughPool(t *testing.T) {
	forEachShape(t, 4500*time.Millisecond, generatedWritesThroughPool)
}

func generatedWritesThroughPool(t *testing.T, ddl string, budget time.Duration) {
	k, g, tp := startGen(t, budget, ddl)
	refused, ran := map[string]int{}, map[string]int{}
	i := 0
	for ; k.more(i); i++ {
		c := g.next()
		raw := runGenCase(t, tp.bare, false, 0, c, false)
		if raw.err != nil {
			continue
		}
		for _, tok := range []uint64{10, 0} {
			s := runGenCase(t, tp.guarded, true, tok, c, false)
			if bad := judgeStale(tp.base, s, tok); bad != "" {
				t.Errorf("case %d, token %d [%s] pre=%q\n  %q\n  err=%v\n  %s", i, tok, c.kind, c.pre, c.sql, s.err, bad)
			} else if s.err != nil && !genTyped(s.err) {
				t.Errorf("case %d, token %d [%s] pre=%q\n  %q\n  untyped error: %v", i, tok, c.kind, c.pre, c.sql, s.err)
			}
		}
		s := runGenCase(t, tp.guarded, true, 100, c, false)
		ran[c.kind]++
		switch {
		case s.err != nil && !genTyped(s.err):
			t.Errorf("case %d, current token [%s] pre=%q\n  %q\n  untyped error: %v", i, c.kind, c.pre, c.sql, s.err)
		case s.err != nil:
			refused[c.kind]++
			if k.ShowLog {
				t.Logf("refused with a current token [%s] %q: %v", c.kind, c.sql, s.err)
			}
		case s.cmp != raw.cmp || s.led != raw.led:
			t.Errorf("case %d, current token [%s] pre=%q\n  %q\n  a different write: plain %s || %s\n  fenced: %s || %s", i, c.kind, c.pre, c.sql, raw.cmp, raw.led, s.cmp, s.led)
		default:
			for _, r := range strings.Split(s.acc, ";") {
				if f := strings.Split(r, ","); !strings.Contains(tp.base.acc, r) && len(f) > 2 && f[2] != "100" {
					t.Errorf("case %d, current token [%s] %q: row %s not stamped with 100", i, c.kind, c.sql, r)
				}
			}
		}
	}
	var kinds []string
	for kind := range ran {
		kinds = append(kinds, fmt.Sprintf("%s %d/%d", kind, refused[kind], ran[kind]))
	}
	sort.Strings(kinds)
	t.Logf("%d cases in %v; refused with a current token (refused/ran): %s", i, time.Since(k.start).Round(time.Millisecond), strings.Join(kinds, ", "))
}
