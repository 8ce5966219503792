// Conformance cases over time: prepared statements across tokens, a lease lost at commit, racing writers.

package fencetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
)

// One prepared statement serves transactions with different tokens: the token is a bind
// parameter, not part of the SQL text (docs/design.md, G5).
func testPrepared(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(1, 1)
	st, err := e.db.PrepareContext(e.ctx, e.q("UPDATE accounts SET balance = balance + ? WHERE id = ?"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tk := range []uint64{7, 8} {
		tx, err := e.db.BeginTx(tok(e.ctx, tk), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.StmtContext(e.ctx, st).ExecContext(e.ctx, 1, 1); err != nil {
			t.Fatalf("token %d: %v", tk, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if r := e.row(1); r.token != int64(tk) {
			t.Fatalf("token %d: row = %+v", tk, r)
		}
	}
	_, err = st.ExecContext(tok(e.ctx, 7), 1, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if r := e.row(1); r.balance != 102 {
		t.Fatalf("balance = %d, want 102", r.balance)
	}
}

type fakeLease struct {
	tok  uint64
	lost chan struct{}
}

func (l *fakeLease) Token() uint64         { return l.tok }
func (l *fakeLease) Lost() <-chan struct{} { return l.lost }

// GrantReceived and ConfirmHeldSince make it a fencedsql.LeaseConfirmer: the fake's
// lock service confirms it while it is held.
func (l *fakeLease) GrantReceived() time.Time                          { return time.Time{} }
func (l *fakeLease) ConfirmHeldSince(context.Context, time.Time) error { return l.Err() }
func (l *fakeLease) Err() error {
	select {
	case <-l.lost:
		return fmt.Errorf("test: %w", lockclient.ErrLeaseLost)
	default:
		return nil
	}
}

func testLeaseLost(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	l := &fakeLease{tok: 7, lost: make(chan struct{})}
	tx, err := e.db.BeginTx(fencedsql.WithLease(e.ctx, l), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(e.ctx, e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	close(l.lost)
	err = tx.Commit()
	wantErr(t, err, lockclient.ErrLeaseLost)
	if r := e.row(1); r.balance != 100 || r.token != 5 {
		t.Fatalf("write of a lost lease committed: %+v", r)
	}
}

// Real connections race on one row with increasing tokens: the row ends with the
// largest token that succeeded and the balance counts exactly the successes.
func testRace(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(1, 1)
	if b.Name == "sqlite" {
		e.db.SetMaxOpenConns(1) // one writer at a time; the race is between statements
	}
	var mu sync.Mutex
	var wins []uint64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				tk := uint64(2 + i*4 + w)
				tx, err := e.db.BeginTx(tok(e.ctx, tk), nil)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = tx.ExecContext(e.ctx, e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?"), 1)
				if err == nil {
					err = tx.Commit()
				} else {
					tx.Rollback()
				}
				switch {
				case err == nil:
					mu.Lock()
					wins = append(wins, tk)
					mu.Unlock()
				case errors.Is(err, fencedsql.ErrFenced):
				case b.MySQL && strings.Contains(err.Error(), "Deadlock"):
				case strings.Contains(err.Error(), "could not serialize"):
				default:
					t.Errorf("token %d: %v", tk, err)
				}
			}
		}()
	}
	wg.Wait()
	var maxWin uint64
	for _, w := range wins {
		maxWin = max(maxWin, w)
	}
	r := e.row(1)
	if r.balance != 100+int64(len(wins)) || r.token != int64(maxWin) {
		t.Fatalf("row = %+v after %d successful writes (max token %d)", r, len(wins), maxWin)
	}
}
