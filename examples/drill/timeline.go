package main

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// evKind is one kind of timeline event.
type evKind uint8

const (
	evGrant          evKind = iota // the worker was granted the lease
	evRelease                      // it released the lease while still holding it
	evLost                         // the lease was lost (declared by the client, or found expired at release)
	evPauseStart                   // an injected pause began
	evPartitionStart               // an injected partition began
	evFaultEnd                     // the pause or partition ended
	evCommit                       // a write committed (late: after a fault)
	evRejected                     // a late write was refused by the database (ErrFenced)
	evRefused                      // a late write's Commit was refused (ErrLeaseLost)
	evSkipped                      // process mode: the lease check before the write failed; no write sent
)

// event is one timestamped event of one worker.
type event struct {
	At     time.Duration // since the run's start
	Worker int
	Kind   evKind
	Token  uint64
	Late   bool // evCommit: a write after an injected fault
}

// timeline records one run's events. A nil *timeline records nothing.
type timeline struct {
	name    string
	workers int
	mu      sync.Mutex
	start   time.Time
	end     time.Duration
	events  []event
}

func newTimeline(name string, workers int) *timeline {
	return &timeline{name: name, workers: workers}
}

func (tl *timeline) begin(t time.Time) {
	if tl != nil {
		tl.start = t
	}
}

func (tl *timeline) finish(t time.Time) {
	if tl != nil {
		tl.mu.Lock()
		tl.end = t.Sub(tl.start)
		tl.mu.Unlock()
	}
}

// add records an event that happened at t.
func (tl *timeline) add(t time.Time, worker int, kind evKind, token uint64, late bool) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	tl.events = append(tl.events, event{At: t.Sub(tl.start), Worker: worker, Kind: kind, Token: token, Late: late})
	tl.mu.Unlock()
}

// bar is a lease held from Start to End; Lost says how it ended.
type bar struct {
	Start, End time.Duration
	Token      uint64
	Lost       bool
}

// span is an injected fault.
type span struct {
	Start, End time.Duration
	Partition  bool
}

// lanes turns the events into each worker's lease bars, fault spans and late-write
// markers.
func (tl *timeline) lanes() (bars [][]bar, spans [][]span, marks [][]event) {
	tl.mu.Lock()
	evs := slices.Clone(tl.events)
	end := tl.end
	tl.mu.Unlock()
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.At, b.At) })
	bars = make([][]bar, tl.workers)
	spans = make([][]span, tl.workers)
	marks = make([][]event, tl.workers)
	open := make([]*bar, tl.workers)
	fault := make([]*span, tl.workers)
	for _, e := range evs {
		w := e.Worker
		if w < 0 || w >= tl.workers {
			continue
		}
		switch e.Kind {
		case evGrant:
			open[w] = &bar{Start: e.At, End: -1, Token: e.Token}
		case evRelease, evLost:
			if b := open[w]; b != nil {
				b.End, b.Lost = e.At, e.Kind == evLost
				bars[w] = append(bars[w], *b)
				open[w] = nil
			}
		case evPauseStart, evPartitionStart:
			fault[w] = &span{Start: e.At, End: -1, Partition: e.Kind == evPartitionStart}
		case evFaultEnd:
			if s := fault[w]; s != nil {
				s.End = e.At
				spans[w] = append(spans[w], *s)
				fault[w] = nil
			}
		case evRejected, evRefused, evSkipped:
			marks[w] = append(marks[w], e)
		case evCommit:
			if e.Late {
				marks[w] = append(marks[w], e)
			}
		}
	}
	for w := range open {
		if b := open[w]; b != nil {
			b.End = end
			bars[w] = append(bars[w], *b)
		}
		if s := fault[w]; s != nil {
			s.End = end
			spans[w] = append(spans[w], *s)
		}
	}
	return bars, spans, marks
}

// Duration returns the run's length (or the last event's time).
func (tl *timeline) duration() time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	d := tl.end
	for _, e := range tl.events {
		d = max(d, e.At)
	}
	return d
}

// SVG layout.
const (
	svgWidth   = 1100
	svgLeft    = 96 // lane labels
	svgRight   = 24
	laneHeight = 22
	barHeight  = 12
	panelGap   = 36
	headHeight = 84 // title and legend
)

// writeTimelineSVG writes one SVG picture of the runs to path: a panel per run, a lane
// per worker, bars for leases (blue: released; orange: lost), grey spans for injected
// pauses (hatched: partitions), and markers for the writes made after a fault: a red
// dot for one that committed, a black cross for one the database refused (ErrFenced), a
// purple square for one whose Commit was refused because the lease was lost.
func writeTimelineSVG(path string, runs []*timeline, reports []*runReport) error {
	var b bytes.Buffer
	renderTimeline(&b, runs, reports)
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func renderTimeline(b *bytes.Buffer, runs []*timeline, reports []*runReport) {
	var total time.Duration
	workers := 0
	for _, tl := range runs {
		total = max(total, tl.duration())
		workers = max(workers, tl.workers)
	}
	if total <= 0 {
		total = time.Second
	}
	plotW := float64(svgWidth - svgLeft - svgRight)
	x := func(d time.Duration) float64 { return svgLeft + plotW*float64(d)/float64(total) }
	panelH := 24 + workers*laneHeight + 22 // title, lanes, axis
	height := headHeight + len(runs)*(panelH+panelGap)

	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, height, svgWidth, height)
	b.WriteString(`<title>fencedsql fault drill: lease timeline</title>` + "\n")
	b.WriteString(`<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
		`<rect width="6" height="6" fill="#d0d0d0"/><line x1="0" y1="0" x2="0" y2="6" stroke="#888" stroke-width="2"/></pattern></defs>` + "\n")
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", svgWidth, height)
	b.WriteString(`<text x="12" y="22" font-size="15" font-weight="bold">fencedsql fault drill: who held the lease when, and what the late writes did</text>` + "\n")

	// Legend.
	lx, ly := 12.0, 46.0
	legend := func(shape, label string) {
		b.WriteString(shape)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+18, ly+4, esc(label))
		lx += 30 + 7*float64(len(label))
	}
	legend(fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="14" height="%d" fill="#4e79a7"/>`, lx, ly-6, barHeight-2), "lease, released")
	legend(fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="14" height="%d" fill="#f28e2b"/>`, lx, ly-6, barHeight-2), "lease, lost")
	legend(fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="14" height="%d" fill="#9a9a9a" fill-opacity="0.55"/>`, lx, ly-6, barHeight-2), "paused (process mode: frozen by SIGSTOP)")
	legend(fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="14" height="%d" fill="url(#hatch)"/>`, lx, ly-6, barHeight-2), "cut off from the lock service")
	lx, ly = 12, ly+20
	legend(dot(lx+7, ly, ""), "late write committed")
	legend(cross(lx+7, ly, ""), "late write rejected (ErrFenced)")
	legend(square(lx+7, ly, ""), "Commit refused (ErrLeaseLost)")
	legend(ring(lx+7, ly, ""), "lease check failed, no write")

	y0 := float64(headHeight)
	for i, tl := range runs {
		var rr *runReport
		if i < len(reports) {
			rr = reports[i]
		}
		renderPanel(b, tl, rr, y0, x, total)
		y0 += float64(panelH + panelGap)
	}
	b.WriteString("</svg>\n")
}

func renderPanel(b *bytes.Buffer, tl *timeline, rr *runReport, y0 float64, x func(time.Duration) float64, total time.Duration) {
	title := tl.name + " run"
	if rr != nil {
		what := "the lock alone"
		if rr.Name == "fenced" {
			what = "lock + fencing tokens"
		}
		title = fmt.Sprintf("%s run (%s): %d increments committed, final balance %d, %d lost updates; late writes: %d committed, %d rejected",
			rr.Name, what, rr.Committed, rr.FinalBalance, rr.LostUpdates, rr.LateWritesCommitted, rr.FencedRejections)
	}
	fmt.Fprintf(b, `<g class="run" id="run-%s">`+"\n", esc(tl.name))
	fmt.Fprintf(b, `<text x="12" y="%.1f" font-weight="bold">%s</text>`+"\n", y0+14, esc(title))
	bars, spans, marks := tl.lanes()
	top := y0 + 24
	right := x(total)
	for w := range tl.workers {
		ly := top + float64(w*laneHeight)
		mid := ly + laneHeight/2
		if w%2 == 0 {
			fmt.Fprintf(b, `<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="#f4f6f8"/>`+"\n", svgLeft, ly, right-svgLeft, laneHeight)
		}
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">worker-%d</text>`+"\n", svgLeft-8, mid+4, w)
		for _, s := range spans[w] {
			fill := `fill="#9a9a9a" fill-opacity="0.55"`
			what := "paused"
			if s.Partition {
				fill, what = `fill="url(#hatch)"`, "cut off from the lock service"
			}
			fmt.Fprintf(b, `<rect class="fault" x="%.2f" y="%.1f" width="%.2f" height="%d" %s><title>%s</title></rect>`+"\n",
				x(s.Start), ly+1, math.Max(x(s.End)-x(s.Start), 1), laneHeight-2, fill,
				esc(fmt.Sprintf("worker-%d %s %s to %s", w, what, ms(s.Start), ms(s.End))))
		}
		for _, l := range bars[w] {
			fill, end := "#4e79a7", "released"
			if l.Lost {
				fill, end = "#f28e2b", "lost"
			}
			fmt.Fprintf(b, `<rect class="lease" x="%.2f" y="%.1f" width="%.2f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
				x(l.Start), mid-barHeight/2, math.Max(x(l.End)-x(l.Start), 1), barHeight, fill,
				esc(fmt.Sprintf("worker-%d token %d: granted %s, %s %s", w, l.Token, ms(l.Start), end, ms(l.End))))
			if label := fmt.Sprint(l.Token); x(l.End)-x(l.Start) >= float64(6*len(label)+4) {
				// The grant's fencing token, where the bar is wide enough to hold it.
				fmt.Fprintf(b, `<text class="token" x="%.2f" y="%.1f" font-size="9" fill="#fff">%s</text>`+"\n",
					x(l.Start)+2, mid+3, label)
			}
		}
		for _, m := range marks[w] {
			switch m.Kind {
			case evCommit:
				b.WriteString(dot(x(m.At), mid, fmt.Sprintf("worker-%d late write with token %d at %s: committed", w, m.Token, ms(m.At))))
			case evRejected:
				b.WriteString(cross(x(m.At), mid, fmt.Sprintf("worker-%d late write with token %d at %s: rejected by the database (ErrFenced)", w, m.Token, ms(m.At))))
			case evSkipped:
				b.WriteString(ring(x(m.At), mid, fmt.Sprintf("worker-%d token %d at %s: lease check failed, write not sent", w, m.Token, ms(m.At))))
			case evRefused:
				b.WriteString(square(x(m.At), mid, fmt.Sprintf("worker-%d late write with token %d at %s: Commit refused (ErrLeaseLost)", w, m.Token, ms(m.At))))
			}
		}
	}
	// Time axis.
	ay := top + float64(tl.workers*laneHeight) + 4
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444"/>`+"\n", svgLeft, ay, right, ay)
	step := tickStep(total)
	for t := time.Duration(0); t <= total; t += step {
		fmt.Fprintf(b, `<line x1="%.2f" y1="%.1f" x2="%.2f" y2="%.1f" stroke="#444"/>`+"\n", x(t), ay, x(t), ay+4)
		fmt.Fprintf(b, `<text x="%.2f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", x(t), ay+15, esc(tickLabel(t, step)))
	}
	b.WriteString("</g>\n")
}

func dot(cx, cy float64, title string) string {
	return fmt.Sprintf(`<circle class="write-committed" cx="%.2f" cy="%.1f" r="5" fill="#e15759" stroke="#7a1f20" stroke-width="1">%s</circle>`+"\n",
		cx, cy, titleElem(title))
}

func cross(cx, cy float64, title string) string {
	const r = 5
	return fmt.Sprintf(`<path class="write-rejected" d="M%.2f %.1fL%.2f %.1fM%.2f %.1fL%.2f %.1f" stroke="#111" stroke-width="2.5" fill="none">%s</path>`+"\n",
		cx-r, cy-r, cx+r, cy+r, cx-r, cy+r, cx+r, cy-r, titleElem(title))
}

func ring(cx, cy float64, title string) string {
	return fmt.Sprintf(`<circle class="write-skipped" cx="%.2f" cy="%.1f" r="4" fill="none" stroke="#59a14f" stroke-width="2">%s</circle>`+"\n",
		cx, cy, titleElem(title))
}

func square(cx, cy float64, title string) string {
	return fmt.Sprintf(`<rect class="write-refused" x="%.2f" y="%.1f" width="9" height="9" fill="#b07aa1" stroke="#4b2a43">%s</rect>`+"\n",
		cx-4.5, cy-4.5, titleElem(title))
}

func titleElem(s string) string {
	if s == "" {
		return ""
	}
	return "<title>" + esc(s) + "</title>"
}

// tickStep picks a 1-2-5 step giving at most about 12 ticks.
func tickStep(total time.Duration) time.Duration {
	for _, s := range []time.Duration{
		10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	} {
		if total/s <= 12 {
			return s
		}
	}
	return total / 10
}

func tickLabel(t, step time.Duration) string {
	if step < time.Second {
		return fmt.Sprintf("%.1fs", t.Seconds())
	}
	return fmt.Sprintf("%gs", t.Seconds())
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var sb strings.Builder
	_ = xml.EscapeText(&sb, []byte(s))
	return sb.String()
}
