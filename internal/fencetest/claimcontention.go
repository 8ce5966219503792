package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Contention is one round of ClaimContention: N goroutines, each under its own token
// (TokenBase+1 … TokenBase+N in random order), claim overlapping sets of accounts 1–6
// with SELECT <Columns> … FOR UPDATE in a transaction of isolation Iso, then log their
// token per row in claim_contention_log while the row locks are held. With Pred empty
// each claims a random set by id, ordered by id, and must get back exactly that set;
// with Pred (a condition, with ORDER BY/LIMIT if wanted) each claims what Pred
// selects and adds 7 to each row's balance.
type Contention struct {
	Columns   string // the claim's select list: id, then the row's fence_token
	Pred      string
	Iso       sql.IsolationLevel
	N         int
	TokenBase uint64
	// Placeholder returns the driver's i-th bind parameter (1-based).
	Placeholder func(i int) string
	// Expected reports whether err, from a claim's transaction, is an outcome a
	// contended claim may have that is not fencedsql's (a deadlock or lock-wait
	// error of the server); ErrFenced and ErrClaimConflict always are.
	Expected func(t *testing.T, tok uint64, err error) bool
}

// ClaimContention runs c on db (the fenced pool) and checks, reading
// claim_contention_log (seq, id, tok) through raw, that every claim was exact (the
// rows returned are the ids asked for, each stamped with the claim's token) or failed
// typed, and that per row the committed tokens increase in commit order (no older
// token wins after a newer one committed). It empties the log before returning.
func ClaimContention(t *testing.T, ctx context.Context, db, raw *sql.DB, c Contention) {
	t.Helper()
	toks := rand.Perm(c.N)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	fail := func(format string, args ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for i := range c.N {
		tok := c.TokenBase + uint64(toks[i]+1)
		ids := rand.Perm(6)[:2+rand.IntN(3)]
		for j := range ids {
			ids[j]++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := claimAndLog(ctx, db, c, tok, ids, fail)
			if err == nil || errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrClaimConflict) ||
				c.Expected != nil && c.Expected(t, tok, err) {
				return
			}
			fail("token %d: untyped error %T: %v", tok, err, err)
		}()
	}
	wg.Wait()
	for _, b := range bad {
		t.Errorf("%s %s: %s", c.Columns, c.Pred, b)
	}
	rows, err := raw.QueryContext(ctx, "SELECT id, tok FROM claim_contention_log ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	last := map[int64]int64{}
	commits := 0
	for rows.Next() {
		var id, tok int64
		if err := rows.Scan(&id, &tok); err != nil {
			rows.Close()
			t.Fatal(err)
		}
		commits++
		if tok <= last[id] {
			t.Errorf("%s %s: row %d: token %d committed after token %d", c.Columns, c.Pred, id, tok, last[id])
		}
		last[id] = tok
	}
	rows.Close()
	t.Logf("%s %s: %d row commits", c.Columns, c.Pred, commits)
	if _, err := raw.ExecContext(ctx, "DELETE FROM claim_contention_log"); err != nil {
		t.Fatal(err)
	}
}

// claimAndLog is one claimer of ClaimContention: it reports what it finds wrong in
// the claim's rows through fail and returns the transaction's error.
func claimAndLog(ctx context.Context, db *sql.DB, c Contention, tok uint64, ids []int, fail func(string, ...any)) error {
	tctx := fencedsql.WithToken(ctx, tok)
	tx, err := db.BeginTx(tctx, &sql.TxOptions{Isolation: c.Iso})
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	in := make([]string, len(ids))
	for i, id := range ids {
		in[i] = fmt.Sprint(id)
	}
	q := fmt.Sprintf("SELECT %s FROM accounts WHERE id IN (%s) ORDER BY id FOR UPDATE", c.Columns, strings.Join(in, ","))
	if c.Pred != "" {
		q = "SELECT " + c.Columns + " FROM accounts WHERE " + c.Pred + " FOR UPDATE"
	}
	rows, err := tx.QueryContext(tctx, q)
	if err != nil {
		return err
	}
	var got []int
	for rows.Next() {
		var id int
		var ft int64
		if err := rows.Scan(&id, &ft); err != nil {
			rows.Close()
			return err
		}
		if uint64(ft) != tok {
			fail("token %d: row %d returned with fence_token %d", tok, id, ft)
		}
		got = append(got, id)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if c.Pred == "" {
		want := append([]int(nil), ids...)
		sort.Ints(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			fail("token %d: claimed %v, returned %v", tok, want, got)
		}
	} else {
		ids = got
	}
	p1, p2 := c.Placeholder(1), c.Placeholder(2)
	for _, id := range ids {
		if c.Pred != "" {
			if _, err := tx.ExecContext(tctx, "UPDATE accounts SET balance = balance + 7 WHERE id = "+p1, id); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(tctx, "INSERT INTO claim_contention_log (id, tok) VALUES ("+p1+", "+p2+")", id, tok); err != nil {
			return err
		}
	}
	return tx.Commit()
}
