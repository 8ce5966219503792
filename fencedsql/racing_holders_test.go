// Two holders, each under several leases, racing over overlapping rows on two
// connections, on PostgreSQL and MariaDB, with memlock, sqllock and redislock leases
// (generated; from a red-team pass that found no defect, kept as coverage of G10).
//
// Attacked: the token each transaction stamps and checks when the two holders' grants
// are interleaved (either may carry the larger token), under claims of every strength
// (also NOWAIT and WAIT n, which MySQL/MariaDB refuse with ErrUnsupported), ORDER BY …
// LIMIT, a subquery, fenced UPDATEs and upserts, some through a statement prepared on
// the pool and rebound with tx.StmtContext, sleeps, a lease lost mid-transaction, and
// commit or rollback; with sqllock the confirmations of the smaller leases are round
// trips to a lease table in the same database. Oracle, whatever the interleaving: a
// claim that succeeds returns exactly its selection (the owners never change) and, in
// the holder's view, each row then carries the holder's token; errors are ErrFenced,
// ErrClaimConflict (PostgreSQL, G10), ErrLeaseLost (all of them after a loss),
// ErrUnsupported or the server's own lock errors (55P03/40P01, 1205/1213); a lost
// lease never commits; in the end each row's balance is its initial one plus the
// increments of the committed transactions that wrote it, and its token is the largest
// token of the committed transactions that claimed or wrote it (none below the row's
// initial token), else its initial one.
// Knobs: lease_holders_model_test.go.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestRacingHoldersPostgres: the racing holders on PostgreSQL under memlock leases.
func TestRacingHoldersPostgres(t *testing.T) {
	racingHolders(t, holdersPostgres, holdersPostgres.open(t), 25, 250, nil)
}

// TestRacingHoldersMariaDB: the racing holders on MariaDB under memlock leases.
func TestRacingHoldersMariaDB(t *testing.T) {
	racingHolders(t, holdersMariaDB, holdersMariaDB.open(t), 25, 200, nil)
}

// TestRacingHoldersPostgresSQLLock: the racing holders on PostgreSQL under sqllock
// leases whose lease table is in the same database.
func TestRacingHoldersPostgresSQLLock(t *testing.T) {
	f := holdersPostgres.open(t)
	if err := sqllock.CreateTable(context.Background(), f.raw, sqllock.Postgres, "lock_leases"); err != nil {
		t.Fatal(err)
	}
	b, err := sqllock.New(testdb.Open(t, "pgx", f.dsn), sqllock.WithTable("lock_leases"))
	if err != nil {
		t.Fatal(err)
	}
	racingHolders(t, holdersPostgres, f, 15, 120, b)
}

// TestRacingHoldersMariaDBRedis: the racing holders on MariaDB under redislock leases.
func TestRacingHoldersMariaDBRedis(t *testing.T) {
	addr, prefix := testdb.Redis(t)
	rc := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rc.Close() })
	f := holdersMariaDB.open(t)
	racingHolders(t, holdersMariaDB, f, 15, 120, redislock.New(rc, redislock.WithPrefix(prefix+"holders:")))
}

// racingHolders runs the trials; backend is the lock service (nil: a fresh memlock
// service per trial).
func racingHolders(t *testing.T, d holdersDialect, f holdersFixture, short, long int, backend lockclient.Backend) {
	run := startHolders(t, short, long, 2*time.Second)
	stats := map[string]int{}
	var mu sync.Mutex
	defer func() { t.Logf("stats: %v", stats) }()
	for trial := 0; run.more(trial); trial++ {
		racingHoldersTrial(t, run, d, f, run.seed(trial), stats, &mu, backend)
	}
}

// holderOp is one step of a holder's plan.
type holderOp struct {
	kind     int       // holderClaim, …
	claim    heldClaim // holderClaim
	q        string    // holderUpdate, holderUpsert
	sel      []int64   // holderUpdate, holderUpsert
	n        int       // holderSleep: milliseconds; holderLose: the lease's index
	prepared bool      // prepared on the pool, rebound with tx.StmtContext
}

const (
	holderClaim = iota
	holderUpdate
	holderUpsert
	holderSleep
	holderLose
)

// holderResult is what a holder did: its token, whether it committed, the balance
// increments and the rows it claimed or wrote, its trace, and what went against the
// oracle.
type holderResult struct {
	tok       int64
	committed bool
	inc       map[int64]int64
	touched   map[int64]bool
	log, bad  []string
}

func racingHoldersTrial(t *testing.T, run *holdersRun, d holdersDialect, f holdersFixture, seed uint64, stats map[string]int, mu *sync.Mutex, backend lockclient.Backend) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 5858))
	if backend == nil {
		backend = memlock.New()
	}
	var clients [2]*lockclient.Client
	for h := range clients {
		clients[h] = lockclient.New(backend, lockclient.WithTTL(time.Minute))
		defer clients[h].Close(context.Background())
	}
	// Interleaved grants: either holder may carry the larger token.
	var leases [2][]*lockclient.Lease
	n := [2]int{2 + rng.IntN(2), 2 + rng.IntN(2)}
	for key := 0; n[0]+n[1] > 0; key++ {
		h := rng.IntN(2)
		if n[h] == 0 {
			h = 1 - h
		}
		l, err := clients[h].TryAcquire(ctx, fmt.Sprintf("K%d-%d", seed, key))
		if err != nil {
			t.Fatal(err)
		}
		leases[h] = append(leases[h], l)
		n[h]--
	}
	var toks [2]int64
	for h := range 2 {
		for _, l := range leases[h] {
			toks[h] = max(toks[h], int64(l.Token()))
		}
	}
	init := heldModel{}
	for id := int64(1); id <= 8; id++ {
		cands := []int64{0, 1, toks[0], toks[1], min(toks[0], toks[1]) + 1, 0}
		init[id] = heldRow{owner: string(rune('a' + rng.IntN(3))), bal: 10 * id, tok: cands[rng.IntN(len(cands))]}
	}
	setAccounts(t, ctx, f.raw, init)
	// Each holder's plan, drawn before they run.
	var plans [2][]holderOp
	for h := range 2 {
		for range 1 + rng.IntN(4) {
			var o holderOp
			switch k := rng.IntN(12); {
			case k < 5:
				o.kind, o.claim = holderClaim, genHeldClaim(rng, d, init, d.nowait)
			case k < 8:
				o.kind = holderUpdate
				o.q, o.sel = genHeldUpdate(rng, init)
			case k < 9:
				id := 1 + rng.Int64N(8)
				o.kind, o.q, o.sel = holderUpsert, fmt.Sprintf(d.upsert, id), []int64{id}
			case k < 11:
				o.kind, o.n = holderSleep, rng.IntN(15)
			default:
				o.kind, o.n = holderLose, rng.IntN(len(leases[h]))
			}
			o.prepared = rng.IntN(3) == 0
			plans[h] = append(plans[h], o)
		}
	}
	commitWish := [2]bool{rng.IntN(4) != 0, rng.IntN(4) != 0}
	nested := [2]bool{rng.IntN(2) == 0, rng.IntN(2) == 0}
	var res [2]*holderResult
	var wg sync.WaitGroup
	for h := range 2 {
		res[h] = &holderResult{tok: toks[h], inc: map[int64]int64{}, touched: map[int64]bool{}}
		wg.Go(func() {
			runHolder(ctx, d, f, h, leases[h], nested[h], plans[h], commitWish[h], res[h], func(k string) {
				mu.Lock()
				stats[k]++
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	fail := func(format string, a ...any) {
		t.Helper()
		t.Logf("toks %v init %v", toks, init)
		for h := range 2 {
			for _, s := range res[h].log {
				t.Log(s)
			}
		}
		t.Errorf(run.replay(seed)+": "+format, a...)
	}
	for h := range 2 {
		for _, b := range res[h].bad {
			fail("h%d: %s", h, b)
		}
		mu.Lock()
		stats[fmt.Sprintf("committed=%v", res[h].committed)]++
		mu.Unlock()
	}
	final, err := readAccounts(ctx, f.raw)
	if err != nil {
		t.Fatal(err)
	}
	for id, got := range final {
		wantBal, wantTok := init[id].bal, init[id].tok
		touchTok := int64(-1)
		for h := range 2 {
			if res[h].committed && res[h].touched[id] {
				wantBal += res[h].inc[id]
				touchTok = max(touchTok, res[h].tok)
				if res[h].tok < init[id].tok {
					fail("row %d: h%d committed a write/claim with token %d over initial token %d", id, h, res[h].tok, init[id].tok)
				}
			}
		}
		if touchTok >= 0 {
			wantTok = touchTok
		}
		if got.bal != wantBal || got.tok != wantTok {
			fail("row %d: db balance %d token %d, want balance %d token %d", id, got.bal, got.tok, wantBal, wantTok)
		}
	}
}

// runHolder runs holder h's plan in a transaction bound to its leases (WithLeases, or
// nested WithLease), then commits when it wishes to or must be refused, and records
// into r; count counts an outcome in the stats.
func runHolder(ctx context.Context, d holdersDialect, f holdersFixture, h int, leases []*lockclient.Lease, nested bool, plan []holderOp, commitWish bool, r *holderResult, count func(string)) {
	logf := func(format string, a ...any) {
		r.log = append(r.log, fmt.Sprintf("h%d: "+format, append([]any{h}, a...)...))
	}
	badf := func(format string, a ...any) { r.bad = append(r.bad, fmt.Sprintf(format, a...)) }
	var ls []fencedsql.Lease
	for _, l := range leases {
		ls = append(ls, l)
	}
	bctx := fencedsql.WithLeases(ctx, ls...)
	if nested {
		bctx = ctx
		for _, l := range ls {
			bctx = fencedsql.WithLease(bctx, l)
		}
	}
	tx, err := f.db.BeginTx(bctx, nil)
	if err != nil {
		badf("BeginTx: %v", err)
		return
	}
	defer tx.Rollback()
	lost, failed := false, false
	// typed checks a statement's error: ErrLeaseLost after a loss, else a refusal
	// under contention (contendedRefusal).
	typed := func(err error, what string) {
		switch {
		case lost && errors.Is(err, lockclient.ErrLeaseLost):
		case lost:
			badf("%s after a lost lease: want ErrLeaseLost, got %v", what, err)
		case d.contendedRefusal(err):
		default:
			badf("%s: untyped error %v", what, err)
		}
	}
	for _, o := range plan {
		var q string
		var err error
		switch o.kind {
		case holderSleep:
			time.Sleep(time.Duration(o.n) * time.Millisecond)
			continue
		case holderLose:
			_ = leases[o.n].Release(ctx)
			lost = true
			logf("lease %d released", leases[o.n].Token())
			continue
		case holderClaim:
			var got []int64
			q = o.claim.q
			got, err = claimIDs(ctx, f.db, tx, o.prepared, o.claim)
			logf("%s -> %v %v (sel %v)", q, got, err, o.claim.sel)
			if err != nil {
				break
			}
			if !o.claim.returned(got) {
				badf("%s returned %v, selection %v", q, got, o.claim.sel)
			}
			view, verr := readAccounts(ctx, tx)
			if verr != nil {
				badf("read back: %v", verr)
			}
			for _, id := range o.claim.sel {
				if verr == nil && view[id].tok != r.tok {
					badf("%s: claimed row %d carries token %d, holder's %d", q, id, view[id].tok, r.tok)
				}
				r.touched[id] = true
			}
		default: // holderUpdate, holderUpsert
			q = o.q
			var rs sql.Result
			rs, err = execHeld(ctx, f.db, tx, o.prepared, q)
			logf("%s -> %v (sel %v)", q, err, o.sel)
			if err != nil {
				break
			}
			if k, _ := rs.RowsAffected(); o.kind == holderUpdate && k != int64(len(o.sel)) {
				badf("%s affected %d, selection %v", q, k, o.sel)
			}
			for _, id := range o.sel {
				r.inc[id]++
				r.touched[id] = true
			}
		}
		if err != nil && errors.Is(err, fencedsql.ErrUnsupported) && !lost {
			count("unsupported") // NOWAIT/WAIT n on MySQL/MariaDB: the transaction goes on
			continue
		}
		if err != nil {
			typed(err, q)
			failed = true
			break
		}
		if lost {
			badf("%s succeeded after a lost lease", q)
		}
	}
	if !failed && !lost && !commitWish {
		return // rolled back
	}
	err = tx.Commit()
	logf("commit -> %v", err)
	switch {
	case err == nil:
		if lost {
			badf("Commit succeeded after a lost lease")
		}
		// After a statement refused on MySQL/MariaDB the transaction's earlier
		// statements are committable: the model counts them.
		r.committed = true
	case failed: // the commit of a transaction a refused statement ended: any error
	case lost && !errors.Is(err, lockclient.ErrLeaseLost):
		badf("Commit after a lost lease: %v", err)
	case !lost:
		typed(err, "COMMIT")
	}
}

// execHeld runs q in tx, through a statement prepared on db and rebound with
// tx.StmtContext when prepared.
func execHeld(ctx context.Context, db *sql.DB, tx *sql.Tx, prepared bool, q string) (sql.Result, error) {
	if !prepared {
		return tx.ExecContext(ctx, q)
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return tx.StmtContext(ctx, st).ExecContext(ctx)
}
