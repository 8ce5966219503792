package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDrillTimeline writes the SVG timeline and checks that it is well-formed XML whose
// markers match the report: a lease bar per round, a cross per fenced rejection, a red
// dot per late write that committed.
func TestDrillTimeline(t *testing.T) {
	t.Parallel()
	cfg := smallConfig()
	cfg.Seed = 5
	cfg.Timeline = filepath.Join(t.TempDir(), "timeline.svg")
	rep := runDrill(t, cfg)
	if rep.Timeline != cfg.Timeline {
		t.Errorf("report names timeline %q, want %q", rep.Timeline, cfg.Timeline)
	}
	data, err := os.ReadFile(cfg.Timeline)
	if err != nil {
		t.Fatal(err)
	}
	type counts struct{ leases, rejected, committed int }
	got := map[string]*counts{}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var root string
	var run *counts
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("timeline is not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
			if se.Name.Space != "http://www.w3.org/2000/svg" {
				t.Errorf("root element in namespace %q, want SVG's", se.Name.Space)
			}
		}
		attr := map[string]string{}
		for _, a := range se.Attr {
			attr[a.Name.Local] = a.Value
		}
		if se.Name.Local == "g" && attr["class"] == "run" {
			run = &counts{}
			got[strings.TrimPrefix(attr["id"], "run-")] = run
			continue
		}
		if run == nil {
			continue // the legend
		}
		switch attr["class"] {
		case "lease":
			run.leases++
		case "write-rejected":
			run.rejected++
		case "write-committed":
			run.committed++
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	for _, rr := range []runReport{rep.Unfenced, rep.Fenced} {
		c := got[rr.Name]
		if c == nil {
			t.Fatalf("no panel for the %s run", rr.Name)
		}
		t.Logf("%s panel: %+v", rr.Name, *c)
		if int64(c.leases) != rr.Rounds {
			t.Errorf("%s panel: %d lease bars, want %d (one per round)", rr.Name, c.leases, rr.Rounds)
		}
		if int64(c.rejected) != rr.FencedRejections {
			t.Errorf("%s panel: %d rejected-write markers, want %d", rr.Name, c.rejected, rr.FencedRejections)
		}
		if int64(c.committed) != rr.LateWritesCommitted {
			t.Errorf("%s panel: %d committed-late-write markers, want %d", rr.Name, c.committed, rr.LateWritesCommitted)
		}
	}
	if got["fenced"].rejected == 0 {
		t.Errorf("the fenced panel has no rejected-write marker")
	}
}
