package fencedsql

// Fuzz targets for the rewriter, one per dialect:
//
//	go test -run XXX -fuzz '^FuzzRewritePostgres$' -fuzztime 60s ./fencedsql/
//	go test -run XXX -fuzz '^FuzzRewriteMySQL$'    -fuzztime 60s ./fencedsql/
//	go test -run XXX -fuzz '^FuzzRewriteSQLite$'   -fuzztime 60s ./fencedsql/
//
// Every input is rewritten for the guarded tables "accounts" and "shop.orders", plain
// and ExpectVersion, default and strict mode, and run once through a wrapped connection
// over a recording driver. The invariants are listed on (*fzTarget).check.
//
// Every invariant is always enforced.

import (
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// fzInputs returns every seed input.
func fzInputs() []string {
	var in []string
	for _, c := range rewriteCases {
		in = append(in, c.in)
	}
	return append(in, fzSeeds...)
}

// fzTarget is one dialect's set of rewriters and a wrapped connection.
type fzTarget struct {
	d      testDialect
	rws    map[bool]testPlanner // by strict
	conn   *conn
	raw    *fzRawConn
	tokens map[bool]string // quoted token column, by dialect
}

var fzGuards = []Option{Guard("accounts"), Guard("shop.orders")}

func newFzTarget(t testing.TB, d testDialect) *fzTarget {
	ft := &fzTarget{d: d, rws: map[bool]testPlanner{}}
	for _, strict := range []bool{false, true} {
		ft.rws[strict] = newTestRewriter(t, d, append(slices.Clip(fzGuards), WithStrict(strict))...)
	}
	k, err := newCore(append([]Option{WithDialect(d), WithSchemaCheck(false)}, fzGuards...))
	if err != nil {
		t.Fatal(err)
	}
	ft.raw = &fzRawConn{}
	ft.conn = newConn(ft.raw, k)
	return ft
}

func fuzzRewrite(f *testing.F, d testDialect) {
	for _, s := range fzInputs() {
		f.Add(s)
	}
	ft := newFzTarget(f, d)
	var mu sync.Mutex // the wrapped connection is not safe for concurrent use
	f.Fuzz(func(t *testing.T, src string) {
		mu.Lock()
		defer mu.Unlock()
		ft.check(t, src)
	})
}

func FuzzRewritePostgres(f *testing.F) { fuzzRewrite(f, pgTest) }
func FuzzRewriteMySQL(f *testing.F)    { fuzzRewrite(f, mysqlTest) }
func FuzzRewriteSQLite(f *testing.F)   { fuzzRewrite(f, sqliteTest) }

// TestFuzzSeeds runs the fuzz invariants over the seed corpus in all dialects (the
// fuzz targets only run their own dialect's seeds under plain "go test").
func TestFuzzSeeds(t *testing.T) {
	for _, d := range []testDialect{pgTest, mysqlTest, sqliteTest} {
		ft := newFzTarget(t, d)
		for _, s := range fzInputs() {
			ft.check(t, s)
		}
	}
}

// check verifies, for one input:
//
//  1. no panic; a refusal is an *UnsupportedError (errors.Is ErrUnsupported) that names
//     a guarded table or none;
//  2. an input whose text names no guarded table is passed through;
//  3. no bypass: a pass-through input contains no statement that writes a guarded table
//     (fzWritesGuard: the head write keyword, its modifiers and a guarded name, with
//     MySQL executable comments expanded as the server does);
//  4. no spurious refusal: an input that names no guarded table in an identifier (and
//     has no construct the rewriter documents as refused on sight) is passed through;
//  5. a rewritten statement lexes, its placeholders match its argument list (count of ?
//     or highest $n = nUser+1, +1 with the version), every user argument is used once
//     and in order, the quoted token column is in it as an identifier, every byte of
//     the input appears in order in it (the rewriter only inserts), the input's tokens
//     are tokens of it (nothing inserted glues onto or splits a neighbour), and an
//     UPDATE or upsert assigns "<token> = CASE …" at parenthesis depth 0;
//  6. a DELETE has a pre plan: an UPDATE of the same table satisfying 5, and its main
//     statement keeps "token column = $t" at top level;
//  7. plain/versioned and default/strict agree on pass, rewrite or refusal;
//  8. through a wrapped connection: a pass-through sends the input byte-identical with
//     its arguments untouched; a rewrite sends exactly the plan's statements (DELETE:
//     BEGIN, the fencing UPDATE, the DELETE, COMMIT) with the arguments in plan order.
func (ft *fzTarget) check(t *testing.T, src string) {
	t.Helper()
	type result struct {
		p   *plan.Plan
		err error
	}
	var base result
	for _, strict := range []bool{false, true} {
		rw := ft.rws[strict]
		for _, versioned := range []bool{false, true} {
			tag := fmt.Sprintf("%s strict=%v versioned=%v: rewrite(%q)", ft.d.name, strict, versioned, src)
			p, err, panicked := fzRewrite(rw, src, versioned)
			if panicked != "" {
				t.Fatalf("%s: PANIC: %s", tag, panicked)
			}
			ft.checkOne(t, tag, rw, src, versioned, p, err)
			if !strict && !versioned {
				base = result{p, err}
				continue
			}
			switch {
			case (err == nil) != (base.err == nil):
				t.Errorf("%s: refusal differs from the plain variant: %v vs %v", tag, err, base.err)
			case err == nil && p.Kind != base.p.Kind:
				t.Errorf("%s: kind %v differs from the plain variant's %v", tag, p.Kind, base.p.Kind)
			}
		}
	}
	if base.err == nil {
		ft.checkWrapper(t, src, base.p)
	}
}

// fzRewrite calls rw.rewrite and turns a panic into a description with its stack.
func fzRewrite(rw testPlanner, src string, versioned bool) (p *plan.Plan, err error, panicked string) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprintf("%v\n%s", r, debug.Stack())
		}
	}()
	p, err = rw.Rewrite(src, versioned)
	return p, err, ""
}

// ---- the oracles ----

var fzNames = []string{"accounts", "orders"}
