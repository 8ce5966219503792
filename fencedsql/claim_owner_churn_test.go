// Claims by a predicate on a column another holder keeps changing, on PostgreSQL and
// MariaDB at READ COMMITTED (generated; from a red-team pass that found no defect,
// kept as coverage of G10).
//
// Attacked: the rows a claim stamps when the rows matching its WHERE clause move under
// it. A holder under two or more leases claims rows by owner (every strength, at times
// ORDER BY id [DESC] LIMIT n) while another holder, on another connection and under
// its own leases of the same service (its token above or below), keeps moving rows
// between owners through the wrapper and committing. Oracle per successful claim, in
// the claimer's own view right after it (the rows it locked cannot change meanwhile):
// every returned row carries the claimer's token and matches the owner predicate, and
// every row that came to carry the claimer's token with this claim was returned (no
// row stamped that was not returned); a refused claim is ErrFenced, ErrClaimConflict
// (PostgreSQL: a claim with ORDER BY … LIMIT whose rows moved while it waited, G10) or
// the server's own lock error. Knobs: lease_holders_model_test.go.

package fencedsql_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestClaimUnderOwnerChurnPostgres: the churn on PostgreSQL (READ COMMITTED, its
// default).
func TestClaimUnderOwnerChurnPostgres(t *testing.T) {
	claimUnderOwnerChurn(t, holdersPostgres, nil)
}

// TestClaimUnderOwnerChurnMariaDB: the churn on MariaDB at READ COMMITTED.
func TestClaimUnderOwnerChurnMariaDB(t *testing.T) {
	claimUnderOwnerChurn(t, holdersMariaDB, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
}

func claimUnderOwnerChurn(t *testing.T, d holdersDialect, opts *sql.TxOptions) {
	f := d.open(t)
	run := startHolders(t, 8, 40, 1500*time.Millisecond)
	stats := map[string]int{}
	defer func() { t.Logf("stats: %v", stats) }()
	for trial := 0; run.more(trial); trial++ {
		claimUnderOwnerChurnTrial(t, run, d, f, opts, run.seed(trial), stats)
	}
}

func claimUnderOwnerChurnTrial(t *testing.T, run *holdersRun, d holdersDialect, f holdersFixture, opts *sql.TxOptions, seed uint64, stats map[string]int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 585858))
	svc := memlock.New()
	cb := lockclient.New(svc, lockclient.WithTTL(time.Minute)) // the claimer
	cc := lockclient.New(svc, lockclient.WithTTL(time.Minute)) // the churner
	defer cb.Close(context.Background())
	defer cc.Close(context.Background())
	// Four grants, interleaved, at least one to each.
	order := []*lockclient.Client{cb, cc, []*lockclient.Client{cb, cc}[rng.IntN(2)], []*lockclient.Client{cb, cc}[rng.IntN(2)]}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var lb, lc []fencedsql.Lease
	var tokB int64
	for i, cl := range order {
		l, err := cl.TryAcquire(ctx, fmt.Sprintf("K%d-%d", seed, i))
		if err != nil {
			t.Fatal(err)
		}
		if cl == cb {
			lb = append(lb, l)
			tokB = max(tokB, int64(l.Token()))
		} else {
			lc = append(lc, l)
		}
	}
	init := heldModel{}
	for id := int64(1); id <= 12; id++ {
		init[id] = heldRow{owner: string(rune('a' + rng.IntN(3)))}
	}
	setAccounts(t, ctx, f.raw, init)

	stop := make(chan struct{})
	churnDone := make(chan struct{})
	go func() { // the other holder moves rows between owners
		defer close(churnDone)
		cctx := fencedsql.WithLeases(ctx, lc...)
		r := rand.New(rand.NewPCG(seed, 7))
		move := func(tx *sql.Tx) error {
			_, err := tx.ExecContext(cctx, fmt.Sprintf(`UPDATE accounts SET owner = '%c' WHERE id = %d`, 'a'+r.IntN(3), 1+r.IntN(12)))
			return err
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			tx, err := f.db.BeginTx(cctx, opts)
			if err != nil {
				return
			}
			err = move(tx)
			if err == nil && r.IntN(2) == 0 {
				err = move(tx)
			}
			if err != nil {
				tx.Rollback()
				continue
			}
			_ = tx.Commit()
		}
	}()
	defer func() {
		close(stop)
		<-churnDone
	}()

	bctx := fencedsql.WithLeases(ctx, lb...)
	for range 6 {
		tx, err := f.db.BeginTx(bctx, opts)
		if err != nil {
			t.Fatalf("%s: BeginTx: %v", run.replay(seed), err)
		}
		owner := string(rune('a' + rng.IntN(3)))
		c := heldClaim{q: fmt.Sprintf("SELECT id FROM accounts WHERE owner = '%s'", owner)}
		switch rng.IntN(3) {
		case 0:
			c.q += fmt.Sprintf(" ORDER BY id LIMIT %d", 1+rng.IntN(3))
		case 1:
			c.q += fmt.Sprintf(" ORDER BY id DESC LIMIT %d", 1+rng.IntN(3))
		}
		c.q += " " + d.strengths[rng.IntN(len(d.strengths))]
		before, err := readAccounts(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := claimIDs(bctx, f.db, tx, false, c)
		if err != nil {
			if !d.contendedRefusal(err) {
				t.Errorf("%s: %s: untyped %v", run.replay(seed), c.q, err)
			}
			stats["claim-err"]++
			tx.Rollback()
			continue
		}
		stats["claim-ok"]++
		after, err := readAccounts(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range got {
			if after[id].tok != tokB {
				t.Errorf("%s: %s: returned row %d carries token %d, claimer's %d", run.replay(seed), c.q, id, after[id].tok, tokB)
			}
			if after[id].owner != owner {
				t.Errorf("%s: %s: returned row %d has owner %q in the claimer's view", run.replay(seed), c.q, id, after[id].owner)
			}
		}
		for id, r := range after {
			if r.tok == tokB && before[id].tok != tokB && !slices.Contains(got, id) {
				t.Errorf("%s: %s: row %d stamped with the claimer's token but not returned (returned %v)", run.replay(seed), c.q, id, got)
			}
		}
		if rng.IntN(2) == 0 {
			_ = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
	}
}
