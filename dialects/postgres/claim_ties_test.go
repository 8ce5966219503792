package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Claims by row locator over tied ORDER BY keys (red-team rt14c). The claim's locking
// query and its unlocked query are planned apart (a full sort under the lock, a top-N
// sort without it) and broke ties differently: the claim stamped a tied row its locking
// query never took, failed with ErrClaimConflict on every retry without any
// concurrency, or, racing a commit, succeeded with a row it held only FOR NO KEY
// UPDATE while holding another unreturned. Every list now orders a window by the
// caller's ORDER BY and then ctid. SQL leaves the order of ties open, so the claim may
// take other tied rows than the plain driver's read; it must return rows the read could
// return (the same keys), exactly the rows it stamped, each held FOR UPDATE.

// tieBalances: id 1 balance 9, ids 2..20 balance 5 (19 rows tied for first place).
func tieBalances() []int64 {
	b := []int64{9}
	for i := 0; i < 19; i++ {
		b = append(b, 5)
	}
	return b
}

func TestClaimByLocatorTies(t *testing.T) {
	for _, rc := range []claimRace{
		{name: "Limit1", balances: tieBalances(), tail: "ORDER BY balance LIMIT 1"},
		{name: "Limit3", balances: tieBalances(), tail: "ORDER BY balance LIMIT 3"},
		{name: "Limit1Offset2", balances: tieBalances(), tail: "ORDER BY balance LIMIT 1 OFFSET 2"},
		{name: "OffsetNull", balances: []int64{1, 5, 7}, tail: "ORDER BY balance LIMIT 1 OFFSET NULL"},
		{name: "LimitWithoutOrder", balances: tieBalances(), tail: "LIMIT 2"},
		// Racing a commit on the first tie (by ctid: id 2) that keeps it in the window,
		// or moves it out.
		{name: "FirstTieChangedStays", balances: tieBalances(), changes: map[int64]int64{2: 5}, tail: "ORDER BY balance LIMIT 1"},
		{name: "FirstTieChangedLeaves", balances: tieBalances(), changes: map[int64]int64{2: 99}, tail: "ORDER BY balance LIMIT 1"},
		{name: "TiesChangedOffset", balances: tieBalances(), changes: map[int64]int64{2: 99, 3: 5}, tail: "ORDER BY balance LIMIT 2 OFFSET 1"},
	} {
		for _, form := range []struct{ name, cols string }{
			{"OneStatement", "id, balance, fence_token"},
			{"TwoStatements", "id, balance, (SELECT fence_token)"},
		} {
			if form.name == "TwoStatements" && (rc.name == "Limit1Offset2" || rc.name == "OffsetNull" || rc.name == "TiesChangedOffset") {
				continue // an OFFSET is refused in two statements
			}
			t.Run(rc.name+"/"+form.name, func(t *testing.T) {
				t.Parallel() // each run in a database of its own (runClaimRace)
				claimTies(t, rc, form.cols)
			})
		}
	}
}

func claimTies(t *testing.T, rc claimRace, cols string) {
	plain := runClaimRace(t, rc, cols, 0)
	if plain.err != nil {
		t.Fatalf("plain locking read: %v", plain.err)
	}
	toks := []uint64{10}
	if len(rc.changes) > 0 {
		toks = append(toks, 4) // older than the concurrent writer's 5
	}
	balance := func(ids []int64) []int64 {
		var out []int64
		for _, id := range ids {
			b := rc.balances[id-1]
			if nb, ok := rc.changes[id]; ok {
				b = nb
			}
			out = append(out, b)
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	for _, bt := range toks {
		o := runClaimRace(t, rc, cols, bt)
		t.Logf("token %d: returned %v (tokens %v), stamped %v, locked %v, err %v; plain read %v, locked %v", bt, o.got, o.toks, o.stamped, o.locked, o.err, plain.got, plain.locked)
		if o.err != nil {
			if bt < 5 && (errors.Is(o.err, fencedsql.ErrFenced) || errors.Is(o.err, fencedsql.ErrClaimConflict)) {
				continue
			}
			if len(rc.changes) > 0 && errors.Is(o.err, fencedsql.ErrClaimConflict) {
				continue // a race may leave a locked row out of reach
			}
			t.Errorf("token %d: %v; the plain read returns %v", bt, o.err, plain.got)
			continue
		}
		if fmt.Sprint(balance(o.got)) != fmt.Sprint(balance(plain.got)) {
			t.Errorf("token %d: returned %v (keys %v); the plain read returns %v (keys %v): not an answer of the read", bt, o.got, balance(o.got), plain.got, balance(plain.got))
		}
		if fmt.Sprint(o.stamped) != fmt.Sprint(o.got) {
			t.Errorf("token %d: returned %v, stamped %v", bt, o.got, o.stamped)
		}
		for i, tok := range o.toks {
			if tok != int64(bt) {
				t.Errorf("token %d: row %d returned carrying token %d", bt, o.got[i], tok)
			}
		}
		if len(rc.changes) == 0 && len(o.locked) != len(plain.locked) {
			t.Errorf("token %d: %d rows locked (%v); the plain read locks %d (%v)", bt, len(o.locked), o.locked, len(plain.locked), plain.locked)
		}
		for _, id := range o.got {
			if !containsID(o.locked, id) {
				t.Errorf("token %d: row %d returned but not locked", bt, id)
			}
		}
		// Each returned row is held FOR UPDATE: a foreign key check's FOR KEY SHARE waits.
		if len(o.got) > 0 && !o.keyShareBlocked {
			t.Errorf("token %d: a FOR KEY SHARE of returned row %d got through: the claim does not hold it FOR UPDATE", bt, o.got[0])
		}
	}
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestClaimConflictNotSpoofedByData (red-team rt14c): a 22P02 whose message carries
// the mark is ErrClaimConflict only from a statement that carries the claim's check
// (plan.Plan.ConflictChecked); caller data holding the text stays the driver's error.
func TestClaimConflictNotSpoofedByData(t *testing.T) {
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, flag boolean, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token) VALUES (1, 1, 1)`)
	fenced := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET flag = $1::text::boolean WHERE id = 1`, "fencedsql_claim_conflict")
	if err == nil {
		t.Fatal("no error")
	}
	if errors.Is(err, fencedsql.ErrClaimConflict) {
		t.Errorf("a bad boolean in an UPDATE (no claim at all) reported as ErrClaimConflict: %v", err)
	}
	_, err = fenced.ExecContext(ctx, `SELECT 'fencedsql_claim_conflict'::text::boolean`)
	if errors.Is(err, fencedsql.ErrClaimConflict) {
		t.Errorf("an unguarded SELECT reported as ErrClaimConflict: %v", err)
	}
}

// TestNowaitClaimNeverWaits (red-team rt14c): with ties, the claim's UPDATE reached a
// row of the unlocked list its NOWAIT locking list never examined, and waited for
// another transaction holding it: a NOWAIT read blocked. Every list now breaks ties by
// ctid, so the claim's lists agree and it never waits (it may fail with 55P03 where the
// plain read took another tie).
func TestNowaitClaimNeverWaits(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	fenced := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, b := range tieBalances() {
		testdb.Exec(t, raw, fmt.Sprintf(`INSERT INTO accounts (id, balance, fence_token) VALUES (%d, %d, 1)`, i+1, b))
	}
	const q = `SELECT id FROM accounts WHERE balance < 50 ORDER BY balance LIMIT 1 FOR UPDATE NOWAIT`
	// The unlocked list's row: the top-N sort's first tie.
	var uid int64
	if err := raw.QueryRowContext(ctx, `SELECT id FROM accounts WHERE balance < 50 ORDER BY balance LIMIT 1`).Scan(&uid); err != nil {
		t.Fatal(err)
	}
	holder, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback() //nolint:errcheck
	if _, err := holder.ExecContext(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, uid); err != nil {
		t.Fatal(err)
	}
	// The plain NOWAIT read returns at once.
	ptx, _ := raw.BeginTx(ctx, nil)
	var pid int64
	perr := ptx.QueryRowContext(ctx, q).Scan(&pid)
	ptx.Rollback() //nolint:errcheck
	t.Logf("plain NOWAIT read: row %d, err %v (row %d held by another tx)", pid, perr, uid)
	if perr != nil {
		t.Fatalf("the plain NOWAIT read of the first tie failed: %v", perr)
	}
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
	defer qcancel()
	start := time.Now()
	var id int64
	err = tx.QueryRowContext(qctx, q).Scan(&id)
	t.Logf("claim: row %d, err %v after %v", id, err, time.Since(start))
	if time.Since(start) > 1500*time.Millisecond {
		t.Errorf("a FOR UPDATE NOWAIT claim waited %v for a row another transaction holds (the plain NOWAIT read returned row %d at once)", time.Since(start), pid)
	}
}
