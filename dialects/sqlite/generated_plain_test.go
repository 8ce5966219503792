package sqlite_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// Generated writes (generated_sql_test.go) on a plain connection, with the database
// guard alone (the triggers schema.Check's Fix installs), each writing its token
// explicitly (10, 50, 999): REPLACE through the UNIQUE email, slug or composite index,
// UPDATE OR REPLACE, recursive_triggers, key moves by a rowid alias. After each, no
// seeded key (1..4) is live below token 50, and none is gone without a tombstone at
// >= 50 (judgePlain). A BLOB key is another key than its TEXT or INTEGER bytes in
// SQLite, so it is no resurrection (genRows marks it).
func TestGeneratedWritesOnPlainConnection(t *testing.T) {
	forEachShape(t, 2*time.Second, generatedWritesOnPlainConnection)
}

func generatedWritesOnPlainConnection(t *testing.T, ddl string, budget time.Duration) {
	k, g, tp := startGen(t, budget, ddl)
	i, failed := 0, 0
	for ; k.more(i); i++ {
		c := g.next()
		s := runGenCase(t, tp.guarded, false, 0, c, false)
		if s.err != nil {
			failed++
			continue
		}
		if bad := judgePlain(s); bad != "" {
			t.Errorf("case %d [%s] pre=%q\n  %q\n  %s\n  accounts %s\n  tombstones %s", i, c.kind, c.pre, c.sql, bad, s.acc, s.tomb)
		}
	}
	t.Logf("%d cases (%d failed on the server) in %v", i, failed, time.Since(k.start).Round(time.Millisecond))
}

// judgePlain returns "" when, after a write on a plain connection, every seeded key
// (1..4) is live at a token >= 50 or tombstoned at >= 50; else what is not.
func judgePlain(s genState) string {
	live, tomb := genTokens(s.acc, 2), genTokens(s.tomb, 1)
	var bad []string
	for _, k := range []string{"1", "2", "3", "4"} {
		v, ok := live[k]
		switch {
		case ok && v < 50:
			bad = append(bad, fmt.Sprintf("key %s live at token %v < 50", k, v))
		case !ok && tomb[k] < 50:
			bad = append(bad, fmt.Sprintf("key %s gone with tombstone %v < 50", k, tomb[k]))
		}
	}
	sort.Strings(bad)
	return strings.Join(bad, "; ")
}
