package faultdriver

import "testing"

// TestOnlyNewerTombs: the one tolerance of the checker admits extra tombstones at the
// trial's own token (t20) and nothing else.
func TestOnlyNewerTombs(t *testing.T) {
	want := "[1 100 t10 v1] tomb[5 t10]"
	for _, c := range []struct {
		got string
		ok  bool
	}{
		{"[1 100 t10 v1] tomb[5 t10]", true},
		{"[1 100 t10 v1] tomb[5 t10][9 t20]", true},
		{"[1 100 t10 v1] tomb[5 t10][9 t19]", false}, // another token's record
		{"[1 100 t10 v1] tomb[9 t20]", false},        // a tombstone lost
		{"[1 101 t20 v2] tomb[5 t10][9 t20]", false}, // the rows differ
		{"[1 100 t10 v1]", false},                    // no tombstones read
	} {
		if got := OnlyNewerTombs(c.got, want); got != c.ok {
			t.Errorf("OnlyNewerTombs(%q, %q) = %v; want %v", c.got, want, got, c.ok)
		}
	}
}

// TestIDs: #n is the trial's row n.
func TestIDs(t *testing.T) {
	e := &Env{}
	if got := e.IDs("WHERE id IN (#1, #2)"); got != "WHERE id IN (1, 2)" {
		t.Errorf("no IDBase: %q", got)
	}
	e.IDBase = func() int64 { return 300 }
	if got := e.IDs("WHERE id > #0 AND id < #3"); got != "WHERE id > 300 AND id < 303" {
		t.Errorf("IDBase 300: %q", got)
	}
}
