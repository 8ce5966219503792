package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// claimForms are the locking reads the wrapper claims, each selecting accounts 1 and 2
// (or the first of them) with columns id, balance, fence_token.
func claimForms(b Backend) map[string]string {
	const cols = "SELECT id, balance, fence_token FROM accounts WHERE id IN (?, ?)"
	forms := map[string]string{
		"Plain":         cols + " FOR UPDATE",
		"OrderBy":       cols + " ORDER BY id FOR UPDATE",
		"OrderByLimit":  cols + " ORDER BY id LIMIT 1 FOR UPDATE",
		"Parenthesised": "(" + cols + " ORDER BY id FOR UPDATE)",
	}
	if b.Numbered {
		forms["With"] = "WITH w AS (SELECT 1 AS x) " + cols + " ORDER BY id FOR UPDATE"
		forms["ForShare"] = cols + " ORDER BY id FOR SHARE"
		forms["ForNoKeyUpdate"] = cols + " ORDER BY id LIMIT 1 FOR NO KEY UPDATE"
	} else {
		forms["LockInShareMode"] = cols + " ORDER BY id LOCK IN SHARE MODE"
	}
	return forms
}

// testClaimRace: holder A (token 5) claims accounts 1 and 2 with a locking read,
// updates account 1 and keeps its transaction open; holder B issues the same locking
// read meanwhile and waits; A commits. A newer B (token 6) reads the committed values,
// every row stamped with its token; an older B (token 4) gets ErrFenced before any row
// reaches it. For every claimed form.
func testClaimRace(t *testing.T, b Backend) {
	if !b.Numbered && !b.MySQL {
		t.Skip("SQLite has no locking reads to claim")
	}
	for name, form := range claimForms(b) {
		t.Run(name, func(t *testing.T) {
			for _, bTok := range []uint64{6, 4} {
				t.Run(fmt.Sprintf("B%d", bTok), func(t *testing.T) { claimRace(t, b, form, bTok) })
			}
		})
	}
}

func claimRace(t *testing.T, b Backend, form string, bTok uint64) {
	e := setup(t, b)
	e.seed(1, 1, 2)
	q := e.q(form)
	want := 2
	if strings.Contains(form, "LIMIT") {
		want = 1
	}
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()

	txA, err := e.db.BeginTx(tok(ctx, 5), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback() //nolint:errcheck
	if n, err := scanClaim(ctx, txA, q); err != nil || len(n) != want {
		t.Fatalf("holder A's locking read: %v rows, %v", n, err)
	}
	if _, err := txA.ExecContext(ctx, e.q("UPDATE accounts SET balance = ? WHERE id = ?"), 90, 1); err != nil {
		t.Fatal(err)
	}

	type result struct {
		rows []claimedRow
		err  error
	}
	done := make(chan result, 1)
	go func() {
		txB, err := e.db.BeginTx(tok(ctx, bTok), nil)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer txB.Rollback() //nolint:errcheck
		rows, err := scanClaim(ctx, txB, q)
		if err == nil {
			err = txB.Commit()
		}
		done <- result{rows, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("holder B's locking read returned while A held the rows: %v, %v", r.rows, r.err)
	case <-time.After(500 * time.Millisecond): // B waits for A's locks
	}
	if err := txA.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if bTok < 5 {
		if !errors.Is(r.err, fencedsql.ErrFenced) {
			t.Fatalf("older holder B: %v, want ErrFenced", r.err)
		}
		var early *earlyRows
		if errors.As(r.err, &early) {
			t.Fatalf("older holder B was handed %d rows before the error", early.n)
		}
		return
	}
	if r.err != nil {
		t.Fatalf("newer holder B: %v", r.err)
	}
	if len(r.rows) != want {
		t.Fatalf("newer holder B read %v, want %d rows", r.rows, want)
	}
	for _, row := range r.rows {
		wantBal := int64(100)
		if row.id == 1 {
			wantBal = 90
		}
		if row.balance != wantBal || row.token != int64(bTok) {
			t.Fatalf("newer holder B read %+v, want balance %d stamped with token %d", row, wantBal, bTok)
		}
	}
	if got := e.row(1); got.balance != 90 || got.token != int64(bTok) {
		t.Fatalf("account 1 after B committed: %+v", got)
	}
}

type claimedRow struct{ id, balance, token int64 }

// earlyRows is the error of a read that failed after it had returned rows.
type earlyRows struct {
	n   int
	err error
}

func (e *earlyRows) Error() string { return fmt.Sprintf("after %d rows: %v", e.n, e.err) }
func (e *earlyRows) Unwrap() error { return e.err }

func scanClaim(ctx context.Context, tx *sql.Tx, q string) ([]claimedRow, error) {
	rows, err := tx.QueryContext(ctx, q, 1, 2)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []claimedRow
	for rows.Next() {
		var r claimedRow
		if err := rows.Scan(&r.id, &r.balance, &r.token); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		if len(out) > 0 {
			return out, &earlyRows{len(out), err}
		}
		return nil, err
	}
	return out, nil
}
