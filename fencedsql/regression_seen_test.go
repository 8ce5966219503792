package fencedsql

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// TestRegressionSeenOnlyRises: the highest token a look-up found answers newerTokenIn
// for every lower token (WithStrict: also an equal one), never for a higher one, and a
// later look-up finding less (a table read on another server, a row deleted without
// tombstones) does not lower it.
func TestRegressionSeenOnlyRises(t *testing.T) {
	var r regression
	g := &plan.Table{Name: "accounts"}
	other := &plan.Table{Name: "ledger"}
	if r.sawAbove(g, 1, false) {
		t.Fatal("no look-up yet, but sawAbove says a newer token was found")
	}
	r.saw(g, 100)
	r.saw(g, 40)
	for _, c := range []struct {
		tok    uint64
		strict bool
		want   bool
	}{{99, false, true}, {100, false, false}, {100, true, true}, {101, true, false}, {5, false, true}} {
		if got := r.sawAbove(g, c.tok, c.strict); got != c.want {
			t.Errorf("sawAbove(%d, strict=%v) = %v after 100 then 40 were seen; want %v", c.tok, c.strict, got, c.want)
		}
	}
	if r.sawAbove(other, 1, false) {
		t.Error("a look-up of accounts answered for ledger")
	}
}
