// Claims (locking reads), fenced UPDATEs and upserts in a transaction bound to several
// leases, on PostgreSQL and MariaDB, against a stale writer racing the commit
// (generated; from a red-team pass that found no defect, kept as coverage of G10).
//
// Attacked: the token a transaction under several leases stamps and checks (the
// largest of its binding), however the leases are bound (WithLeases, nested
// WithLease, a last lease joining through a statement's context), with a lease of a
// second lock service among them at times, a lease released mid-transaction (also the
// joining one, before or after it joined), savepoints released or rolled back to (also
// after ErrFenced), every claim strength, NOWAIT, ORDER BY … LIMIT and a subquery
// against an unguarded table. Oracle: a model of the rows (balance, token) predicts
// every outcome — a claim returns exactly its selection, in order when ordered; a
// statement over a row carrying a newer token is ErrFenced; the mix of services is
// ErrLeaseServicesDiffer; after a loss every statement and the commit are
// ErrLeaseLost; no commit succeeds after a loss or an abort. The stale writer's UPDATE
// (an expired lease's smaller token) is refused exactly on a row carrying a newer
// token after the transaction, and the table ends as the model says. Knobs:
// lease_holders_model_test.go.

package fencedsql_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestMultiLeaseClaimsPostgres: the generator on PostgreSQL (a refused statement aborts
// the transaction; NOWAIT claims; a claim's stamp undone by ROLLBACK TO SAVEPOINT).
func TestMultiLeaseClaimsPostgres(t *testing.T) { multiLeaseClaims(t, holdersPostgres) }

// TestMultiLeaseClaimsMariaDB: the generator on MariaDB (a refused statement rolls back
// only itself: the transaction's earlier statements stay committable).
func TestMultiLeaseClaimsMariaDB(t *testing.T) { multiLeaseClaims(t, holdersMariaDB) }

func multiLeaseClaims(t *testing.T, d holdersDialect) {
	f := d.open(t)
	run := startHolders(t, 60, 300, 2*time.Second)
	stats := map[string]int{}
	defer func() { t.Logf("stats: %v", stats) }()
	for trial := 0; run.more(trial); trial++ {
		multiLeaseClaimsTrial(t, run, d, f, run.seed(trial), stats)
	}
}

func multiLeaseClaimsTrial(t *testing.T, run *holdersRun, d holdersDialect, f holdersFixture, seed uint64, stats map[string]int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 58))
	var log []string
	logf := func(format string, a ...any) { log = append(log, fmt.Sprintf(format, a...)) }
	fail := func(format string, a ...any) {
		t.Helper()
		for _, s := range log {
			t.Log(s)
		}
		t.Errorf(run.replay(seed)+": "+format, a...)
		log = nil
	}
	svc := memlock.New()
	stale := lockclient.New(svc, lockclient.WithTTL(time.Minute))
	cur := lockclient.New(svc, lockclient.WithTTL(time.Minute))
	oc := lockclient.New(memlock.New(memlock.WithMinToken(1000)), lockclient.WithTTL(time.Minute))
	defer stale.Close(context.Background())
	defer cur.Close(context.Background())
	defer oc.Close(context.Background())

	sl, err := stale.TryAcquire(ctx, "L0")
	if err != nil {
		t.Fatal(err)
	}
	svc.Advance(2 * time.Minute) // silent expiry
	nLeases := 2 + rng.IntN(2)
	var leases []*lockclient.Lease
	for i := range nLeases {
		// A few grants in between so that the tokens are apart.
		for range rng.IntN(3) {
			if x, err := cur.TryAcquire(ctx, fmt.Sprintf("X%d-%d", i, rng.IntN(1000))); err == nil {
				_ = x.Release(ctx)
			}
		}
		l, err := cur.TryAcquire(ctx, fmt.Sprintf("L%d", i))
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	rng.Shuffle(len(leases), func(i, j int) { leases[i], leases[j] = leases[j], leases[i] })
	tokS := int64(sl.Token())
	var tokB int64
	for _, l := range leases {
		tokB = max(tokB, int64(l.Token()))
	}
	mixed := rng.IntN(8) == 0
	var ol *lockclient.Lease
	if mixed {
		if ol, err = oc.TryAcquire(ctx, "O"); err != nil {
			t.Fatal(err)
		}
	}

	m := heldModel{}
	for id := int64(1); id <= 8; id++ {
		toks := []int64{0, tokS, tokS, tokB, tokB + 1 + rng.Int64N(3), 1}
		r := heldRow{owner: string(rune('a' + rng.IntN(3))), bal: 10 * id, tok: toks[rng.IntN(len(toks))]}
		if rng.IntN(3) != 0 && r.tok > tokB { // fewer fenced rows
			r.tok = tokS
		}
		m[id] = r
	}
	setAccounts(t, ctx, f.raw, m)
	logf("tokS %d tokB %d leases %d mixed %v rows %v", tokS, tokB, nLeases, mixed, m)

	// Binding.
	var ls []fencedsql.Lease
	for _, l := range leases {
		ls = append(ls, l)
	}
	if mixed {
		ls = append(ls, ol)
	}
	var bctx context.Context
	var joinLater fencedsql.Lease
	bind := rng.IntN(3)
	switch bind {
	case 0:
		bctx = fencedsql.WithLeases(ctx, ls...)
	case 1:
		bctx = ctx
		for _, l := range ls {
			bctx = fencedsql.WithLease(bctx, l)
		}
	default: // the last lease joins through a statement's context
		bctx = fencedsql.WithLeases(ctx, ls[:len(ls)-1]...)
		joinLater = ls[len(ls)-1]
	}
	tokAll, mixedAll := tokB, mixed
	if joinLater != nil {
		mixed = false // the other service's lease, if any, joins later
		tokB = 0
		for _, l := range ls[:len(ls)-1] {
			tokB = max(tokB, int64(l.Token()))
		}
	}
	logf("bind %d", bind)
	tx, err := f.db.BeginTx(bctx, nil)
	if err != nil {
		if mixed && errors.Is(err, fencedsql.ErrLeaseServicesDiffer) {
			stats["mixed-refused-begin"]++
			return
		}
		fail("BeginTx: %v", err)
		return
	}
	defer tx.Rollback()

	committed := maps.Clone(m) // what holds if the transaction does not commit
	var spStack []heldModel    // the model at each savepoint
	aborted := false           // the transaction cannot go on (or the model stops)
	lost := false
	sctx := ctx
	var joinL fencedsql.Lease // announced in sctx
	pendingLost, joinSent := false, false
	// refused handles a statement refused as the model wants (ErrFenced): ROLLBACK TO
	// the last savepoint at times, else the statement alone (MySQL/MariaDB) or the
	// transaction (PostgreSQL) is rolled back.
	rollbackTo := false
	refused := func() {
		switch {
		case len(spStack) > 0 && rng.IntN(3) != 0:
			rollbackTo = true
		case d.abortsTx:
			aborted = true
		}
	}
	// expectErr checks err against the model (want: nil or ErrFenced) and reports
	// whether the statement's outcome ends the trial's statements.
	expectErr := func(err, want error, what string) bool {
		t.Helper()
		switch {
		case mixed:
			if errors.Is(err, fencedsql.ErrLeaseServicesDiffer) {
				stats["mixed-refused"]++
			} else {
				fail("%s under mixed services: %v", what, err)
			}
		case lost:
			if !errors.Is(err, lockclient.ErrLeaseLost) {
				fail("%s after a lease was lost: want ErrLeaseLost, got %v", what, err)
			}
		case want == nil && err != nil:
			fail("%s: want success, got %v", what, err)
		case want != nil && !errors.Is(err, want):
			fail("%s: want %v, got %v", what, want, err)
		default:
			return false
		}
		aborted = true
		return true
	}
	// fencedBy is ErrFenced when a row of sel carries a token above the binding's.
	fencedBy := func(sel []int64) error {
		for _, id := range sel {
			if m[id].tok > tokB {
				return fencedsql.ErrFenced
			}
		}
		return nil
	}
	// wrote stamps sel with the binding's token in the model, adding inc to each.
	wrote := func(sel []int64, inc int64) {
		for _, id := range sel {
			r := m[id]
			r.tok, r.bal = tokB, r.bal+inc
			m[id] = r
		}
	}
	nOps := 2 + rng.IntN(8)
	for op := 0; op < nOps && !aborted; op++ {
		if joinLater != nil && rng.IntN(2) == 0 {
			sctx = fencedsql.WithLease(ctx, joinLater)
			joinL, joinLater = joinLater, nil
			logf("op %d: statement lease joins", op)
		}
		k := rng.IntN(12)
		if k < 11 && pendingLost {
			lost = true // this statement carries the released lease
		}
		if k < 11 && joinL != nil && !joinSent {
			// This statement carries the joining lease: from now on the binding is
			// all the leases (and mixes services when the joining one is the
			// other service's).
			joinSent = true
			tokB, mixed = tokAll, mixedAll
		}
		switch {
		case k < 4: // claim
			var nowait []string
			if d.abortsTx {
				nowait = d.nowait // MySQL/MariaDB refuse NOWAIT/WAIT: racing_holders_test.go
			}
			c := genHeldClaim(rng, d, m, nowait)
			want := fencedBy(c.sel)
			got, err := claimIDs(sctx, f.db, tx, false, c)
			logf("op %d: %s -> %v %v (model %v want %v)", op, c.q, got, err, c.sel, want)
			if expectErr(err, want, c.q) {
				break
			}
			if err != nil {
				stats["claim-fenced"]++
				refused()
				break
			}
			stats["claim-ok"]++
			if !c.returned(got) {
				fail("%s returned %v, model selects %v", c.q, got, c.sel)
				aborted = true
				break
			}
			wrote(c.sel, 0)
		case k < 8: // a fenced UPDATE, or an upsert of an existing key
			what, q, sel := "update", "", []int64(nil)
			if k < 7 {
				q, sel = genHeldUpdate(rng, m)
			} else {
				id := 1 + rng.Int64N(8)
				what, q, sel = "upsert", fmt.Sprintf(d.upsert, id), []int64{id}
			}
			want := fencedBy(sel)
			res, err := tx.ExecContext(sctx, q)
			logf("op %d: %s -> %v (model %v want %v)", op, q, err, sel, want)
			if expectErr(err, want, q) {
				break
			}
			if err != nil {
				stats[what+"-fenced"]++
				refused()
				break
			}
			stats[what+"-ok"]++
			if n, _ := res.RowsAffected(); what == "update" && n != int64(len(sel)) {
				fail("%s affected %d rows, model %d", q, n, len(sel))
			}
			wrote(sel, 1)
		case k < 11: // savepoint: set, released or rolled back to
			if len(spStack) > 0 && rng.IntN(2) == 0 {
				if rng.IntN(2) == 0 {
					rollbackTo = true
					break
				}
				_, err := tx.ExecContext(sctx, fmt.Sprintf("RELEASE SAVEPOINT sp%d", len(spStack)))
				logf("op %d: release sp%d -> %v", op, len(spStack), err)
				if !expectErr(err, nil, "RELEASE") {
					spStack = spStack[:len(spStack)-1]
				}
				break
			}
			_, err := tx.ExecContext(sctx, fmt.Sprintf("SAVEPOINT sp%d", len(spStack)+1))
			logf("op %d: savepoint sp%d -> %v", op, len(spStack)+1, err)
			if !expectErr(err, nil, "SAVEPOINT") {
				spStack = append(spStack, maps.Clone(m))
			}
		default: // a lease is lost (released) mid-transaction
			if lost || mixedAll { // a trial mixing services loses none
				break
			}
			l := leases[rng.IntN(len(leases))]
			_ = l.Release(ctx)
			switch {
			case joinLater != nil && fencedsql.Lease(l) == joinLater:
				// It never joins: the transaction never knew it, and releasing it
				// again later is no loss either.
				joinLater = nil
				leases = slices.DeleteFunc(leases, func(x *lockclient.Lease) bool { return x == l })
			case joinL != nil && fencedsql.Lease(l) == joinL && !joinSent:
				pendingLost = true
			default:
				lost = true
			}
			logf("op %d: lease %d released", op, l.Token())
		}
		if !rollbackTo || aborted {
			continue
		}
		rollbackTo = false
		_, err := tx.ExecContext(sctx, fmt.Sprintf("ROLLBACK TO SAVEPOINT sp%d", len(spStack)))
		logf("op %d: rollback to sp%d -> %v", op, len(spStack), err)
		if !expectErr(err, nil, "ROLLBACK TO SAVEPOINT") {
			stats["rollback-to"]++
			m = maps.Clone(spStack[len(spStack)-1]) // the savepoint stays
		}
	}

	// A stale writer races the commit on another connection.
	staleID := 1 + rng.Int64N(8)
	staleDone := make(chan error, 1)
	go func() {
		sctx := fencedsql.WithLease(ctx, sl)
		stx, err := f.db.BeginTx(sctx, nil)
		if err != nil {
			staleDone <- err
			return
		}
		if _, err := stx.ExecContext(sctx, fmt.Sprintf("UPDATE accounts SET balance = balance + 1000 WHERE id = %d", staleID)); err != nil {
			stx.Rollback()
			staleDone <- err
			return
		}
		staleDone <- stx.Commit()
	}()
	time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)

	switch {
	case aborted || lost || mixed:
		if err := tx.Commit(); err == nil {
			fail("Commit succeeded after lost=%v mixed=%v aborted=%v", lost, mixed, aborted)
			committed = m
		}
		stats["no-commit"]++
	case rng.IntN(5) == 0:
		_ = tx.Rollback()
		stats["rollback"]++
	default:
		if err := tx.Commit(); err != nil {
			fail("Commit: %v", err)
		} else {
			stats["commit"]++
			committed = m
		}
	}
	serr := <-staleDone
	// The stale writer (token tokS) may change the row only if it carries no newer token.
	r := committed[staleID]
	logf("stale update id %d (row tok %d) -> %v", staleID, r.tok, serr)
	switch {
	case serr == nil:
		stats["stale-ok"]++
		if r.tok > tokS {
			fail("stale write under token %d changed row %d carrying token %d", tokS, staleID, r.tok)
		}
		r.bal += 1000
		r.tok = tokS
		committed[staleID] = r
	case errors.Is(serr, fencedsql.ErrFenced):
		stats["stale-fenced"]++
		if r.tok <= tokS {
			fail("stale write refused ErrFenced on a row carrying token %d <= %d", r.tok, tokS)
		}
	case errors.Is(serr, lockclient.ErrLeaseLost):
		stats["stale-lost"]++
	default:
		fail("stale write: untyped error %v", serr)
	}

	// The database against the model.
	final, err := readAccounts(ctx, f.raw)
	if err != nil {
		t.Fatal(err)
	}
	for id, got := range final {
		if w := committed[id]; w.bal != got.bal || w.tok != got.tok {
			fail("row %d: db balance %d token %d, model balance %d token %d", id, got.bal, got.tok, w.bal, w.tok)
		}
	}
}
