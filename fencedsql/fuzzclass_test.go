package fencedsql

import "testing"

// TestFuzzInvariantsOnKeywordRuns runs the fuzz invariants over a class the fuzzer
// found a member of ("INSERT INTO INTO accounts"): every write head followed by any two
// words that may stand, or look as if they may stand, before a table name, then a
// guarded table and each clause shape.
func TestFuzzInvariantsOnKeywordRuns(t *testing.T) {
	heads := []string{"INSERT", "UPDATE", "DELETE", "REPLACE", "WITH x AS (SELECT 1) INSERT", "WITH x AS (SELECT 1) UPDATE"}
	words := []string{"", "INTO", "FROM", "ONLY", "IGNORE", "LOW_PRIORITY", "QUICK", "DELAYED", "HIGH_PRIORITY",
		"TABLE", "OR", "OR REPLACE", "OR IGNORE", "AS", "SET", "VALUES", "SELECT", "WHERE", "JOIN", "USING", "LATERAL"}
	tails := []string{"", " SET a = 1", " (a) VALUES (1)", " WHERE id = 1", " x SET a = 1", " AS x WHERE x.id = 1"}
	for _, d := range []testDialect{pgTest, mysqlTest, sqliteTest} {
		ft := newFzTarget(t, d)
		for _, h := range heads {
			for _, w1 := range words {
				for _, w2 := range words {
					for _, tl := range tails {
						s := h
						for _, w := range []string{w1, w2} {
							if w != "" {
								s += " " + w
							}
						}
						ft.check(t, s+" accounts"+tl)
					}
				}
			}
		}
	}
}
