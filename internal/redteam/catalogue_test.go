// Running the catalogue: each hostile entry refused or fenced, each harmless one unchanged.

package redteam

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ---------------------------------------------------------------- the catalogue

func runCatalogue(t *testing.T, b backend, entries []entry) {
	seen := map[string]bool{}
	for _, e := range entries {
		name := e.class + "/" + e.name
		if seen[name] {
			t.Fatalf("duplicate entry %q", name)
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if e.want == Harmless {
				harmless(t, b, e)
			} else {
				hostile(t, b, e)
			}
		})
	}
}

func tokenCtx(ctx context.Context, tok uint64) context.Context {
	return fencedsql.WithToken(ctx, tok)
}

func describe(e entry) string {
	var parts []string
	for _, st := range e.steps {
		p := st.sql
		if len(st.args) > 0 {
			p += fmt.Sprintf("  %v", st.args)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "\n    ")
}

// hostile: proven to change data raw, then refused or fenced with nothing changed.
func hostile(t *testing.T, b backend, e entry) {
	// 1. The raw driver: legal, and it changes data.
	rawDB := freshDB(t, b, e)
	before := rawDB.snap()
	plain, _ := rawDB.open(false, nil)
	r := run(rawDB.ctx, plain, e)
	if r.err != nil {
		t.Fatalf("ENTRY WRONG: step %d fails on the raw %s driver: %v\n    %s", r.at+1, b.name, r.err, describe(e))
	}
	rawLines := r.lines
	rawAfter := rawDB.snap()
	switch {
	case e.want == Claim:
	case len(e.then) > 0:
		// the follow-up must show the statement's effect on the guarded rows
		rawDB.runThen(e, true)
		rawAfter = rawDB.snap()
		if guardedDiff(before, rawAfter) == "" {
			t.Fatalf("ENTRY WRONG: with its follow-up it changes no row of accounts on the raw %s driver\n    %s\n  then: %s", b.name, describe(e), strings.Join(e.then, "; "))
		}
	case diff(before, rawAfter) == "":
		t.Fatalf("ENTRY WRONG: it changes nothing on the raw %s driver\n    %s", b.name, describe(e))
	}

	// 2. The fenced driver on a fresh database with the same rows.
	d := freshDB(t, b, e)
	base := d.snap()
	if df := diff(before, base); df != "" {
		t.Fatalf("two fresh databases differ (setup not deterministic):\n%s", df)
	}
	if len(e.then) > 0 && e.want != Refused && e.want != NoToken {
		t.Fatalf("harness: follow-up statements only go with Refused and NoToken entries")
	}
	check := func(what string, ctx context.Context, want ...error) error {
		t.Helper()
		base := d.snap() // a Refused entry's follow-up may have run before
		w, rec := d.open(true, nil)
		rec.start()
		r := run(ctx, w, e)
		sent := rec.stop()
		after := d.snap()
		if len(e.then) > 0 {
			// nothing of the statement may be left for the follow-up to fire
			d.runThen(e, false)
			if df := guardedDiff(base, d.snap()); df != "" {
				t.Errorf("BYPASS: %s on %s: after the follow-up (%s) accounts changed:\n%s\n    %s",
					what, b.name, strings.Join(e.then, "; "), indent(df), describe(e))
			}
		}
		ok := false
		for _, target := range want {
			ok = ok || errors.Is(r.err, target)
		}
		if !ok {
			t.Errorf("BYPASS? %s on %s: got err=%v (step %d), want %v\n    %s\n  sent to the driver:\n    %s\n  change:\n%s",
				what, b.name, r.err, r.at+1, want, describe(e), strings.Join(sent, "\n    "), indent(diff(base, after)))
		} else if df := diff(base, after); df != "" {
			t.Errorf("BYPASS: %s on %s failed with %v but changed data:\n%s\n    %s\n  sent to the driver:\n    %s",
				what, b.name, r.err, indent(df), describe(e), strings.Join(sent, "\n    "))
		}
		if t.Failed() {
			t.FailNow()
		}
		return r.err
	}
	stale := tokenCtx(d.ctx, staleToken)
	fresh := tokenCtx(d.ctx, freshToken)
	switch e.want {
	case Refused:
		check("stale token", stale, fencedsql.ErrUnsupported)
		check("fresh token", fresh, fencedsql.ErrUnsupported)
	case NoToken:
		check("no token", d.ctx, fencedsql.ErrNoToken)
	case Fenced, Claim:
		check("stale token", stale, fencedsql.ErrFenced)
		freshRun(t, d, e, base, rawAfter, rawLines, fresh, false)
	case Exact:
		if err := check("stale token", stale, fencedsql.ErrUnsupported, fencedsql.ErrFenced); errors.Is(err, fencedsql.ErrUnsupported) {
			check("fresh token", fresh, fencedsql.ErrUnsupported)
			return
		}
		freshRun(t, d, e, base, rawAfter, rawLines, fresh, true)
	}
}

// freshRun runs a fenced entry with a newer token: it must succeed and do what the raw
// driver did; every row it changed carries the token.
func freshRun(t *testing.T, d *dbs, e entry, base, rawAfter snapshot, rawLines []string, ctx context.Context, exact bool) {
	t.Helper()
	w, rec := d.open(true, nil)
	rec.start()
	r := run(ctx, w, e)
	sent := rec.stop()
	if r.err != nil && (exact || e.want == Claim) && errors.Is(r.err, fencedsql.ErrUnsupported) {
		// Refused at run time (the second selection differed from the fencing
		// UPDATE's): acceptable when nothing of it was kept.
		if df := diff(base, d.snap()); df != "" {
			t.Fatalf("fresh token %d on %s: refused at run time (%v) but changed data:\n%s\n    %s\n  sent:\n    %s",
				freshToken, d.b.name, r.err, indent(df), describe(e), strings.Join(sent, "\n    "))
		}
		return
	}
	if r.err != nil {
		t.Fatalf("fresh token %d on %s: step %d failed: %v\n    %s\n  sent:\n    %s", freshToken, d.b.name, r.at+1, r.err, describe(e), strings.Join(sent, "\n    "))
	}
	if a, b := maskLines(rawLines), maskLines(r.lines); !slices.Equal(a, b) {
		t.Errorf("NOT THE SAME RESULT: with a fresh token on %s the statements returned other rows or counts than on the raw driver (fencing columns masked):\n  raw:\n    %s\n  fenced:\n    %s\n    %s\n  sent:\n    %s",
			d.b.name, strings.Join(a, "\n    "), strings.Join(b, "\n    "), describe(e), strings.Join(sent, "\n    "))
	}
	d.runThen(e, true)
	after := d.snap()
	if exact {
		if df := diff(rawAfter, after); df != "" {
			t.Fatalf("NOT EXACT: with a fresh token on %s the result differs from the raw driver's (raw → fenced):\n%s\n    %s\n  sent:\n    %s",
				d.b.name, indent(df), describe(e), strings.Join(sent, "\n    "))
		}
		return
	}
	if df := diff(rawAfter.masked(), after.masked()); df != "" {
		t.Fatalf("with a fresh token on %s the result differs from the raw driver's beyond the fencing columns (raw → fenced):\n%s\n    %s\n  sent:\n    %s",
			d.b.name, indent(df), describe(e), strings.Join(sent, "\n    "))
	}
	if bad := unstamped(base, after, freshToken); len(bad) > 0 {
		t.Fatalf("with a fresh token on %s rows changed without the token:\n  %s\n    %s", d.b.name, strings.Join(bad, "\n  "), describe(e))
	}
	if e.want == Claim && diff(base, after) == "" {
		t.Fatalf("with a fresh token on %s the locking read claimed no row\n    %s\n  sent:\n    %s", d.b.name, describe(e), strings.Join(sent, "\n    "))
	}
}

// harmless: the same results, database and driver traffic as the raw driver.
func harmless(t *testing.T, b backend, e entry) {
	type outcome struct {
		r    result
		sent []string
		snap snapshot
	}
	do := func(fenced bool) outcome {
		d := freshDB(t, b, e)
		db, rec := d.open(fenced, nil)
		ctx := d.ctx
		if !e.noTok {
			ctx = tokenCtx(ctx, staleToken)
		}
		// The pool's first connection (and, fenced, its first-use catalog queries) before
		// the recording: only the entry's statements are compared.
		db.SetMaxIdleConns(1)
		db.SetMaxOpenConns(1)
		if err := db.PingContext(d.ctx); err != nil {
			t.Fatalf("ping: %v", err)
		}
		rec.start()
		r := run(ctx, db, e)
		sent := rec.stop()
		d.runThen(e, false)
		return outcome{r: r, sent: sent, snap: d.snap()}
	}
	raw := do(false)
	if raw.r.err != nil {
		t.Fatalf("ENTRY WRONG: step %d fails on the raw %s driver: %v\n    %s", raw.r.at+1, b.name, raw.r.err, describe(e))
	}
	wr := do(true)
	// The wrapper's own session check (a new connection's, before the first statement
	// judged by a text a session may read otherwise) is not the entry's statement.
	if q := b.dialect.SessionQuery(); q != "" {
		wr.sent = slices.DeleteFunc(wr.sent, func(l string) bool { return l == "query "+q })
	}
	// Nor is the session check's listing of the server's replication connections, once
	// per connection (dialect.ReplicationLister: MySQL/MariaDB, red-team rt48i F1;
	// PostgreSQL's subscriptions, rt50c F3).
	if rl, ok := b.dialect.(dialect.ReplicationLister); ok {
		listing := []string{"query SHOW ALL SLAVES STATUS", "query SHOW REPLICA STATUS", "query SHOW SLAVE STATUS"}
		rl.ReplicationConfigured(context.Background(), func(_ context.Context, q string, _ ...any) ([][]string, error) {
			listing = append(listing, "query "+q)
			return [][]string{{"0"}}, nil
		})
		wr.sent = slices.DeleteFunc(wr.sent, func(l string) bool { return slices.Contains(listing, l) })
	}
	// Its transaction end spelled out (dialect.TxEnder) is the driver's Commit or Rollback.
	if te, ok := b.dialect.(dialect.TxEnder); ok {
		for i, l := range wr.sent {
			switch l {
			case "exec " + te.EndTx(true):
				wr.sent[i] = "commit"
			case "exec " + te.EndTx(false):
				wr.sent[i] = "rollback"
			}
		}
	}
	if wr.r.err != nil {
		t.Fatalf("harmless statement refused or failed on the fenced %s driver (step %d): %v\n    %s\n  sent:\n    %s",
			b.name, wr.r.at+1, wr.r.err, describe(e), strings.Join(wr.sent, "\n    "))
	}
	if !slices.Equal(raw.sent, wr.sent) {
		t.Errorf("CHANGED IN MEANING? the driver received other text through the fenced %s driver:\n  raw:\n    %s\n  fenced:\n    %s",
			b.name, strings.Join(raw.sent, "\n    "), strings.Join(wr.sent, "\n    "))
	}
	if !slices.Equal(raw.r.lines, wr.r.lines) {
		t.Errorf("other results through the fenced %s driver:\n  raw:\n    %s\n  fenced:\n    %s",
			b.name, strings.Join(raw.r.lines, "\n    "), strings.Join(wr.r.lines, "\n    "))
	}
	if df := diff(raw.snap, wr.snap); df != "" {
		t.Errorf("the database differs after the fenced %s driver ran it (raw → fenced):\n%s", b.name, indent(df))
	}
	if len(raw.sent) == 0 {
		t.Errorf("recorder saw nothing (harness broken)")
	}
}

// maskLines hides the fencing columns' values in result lines.
func maskLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		rows := strings.Split(l, "\n")
		for j, r := range rows {
			parts := strings.Split(r, "|")
			for k, p := range parts {
				if strings.HasPrefix(p, "fence_token=") || strings.HasPrefix(p, "version=") {
					parts[k] = p[:strings.IndexByte(p, '=')+1] + "*"
				}
			}
			rows[j] = strings.Join(parts, "|")
		}
		out[i] = strings.Join(rows, "\n")
	}
	return out
}

func indent(s string) string {
	if s == "" {
		return "    (none)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
