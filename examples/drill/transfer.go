package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
)

// The transfer workload (-workload transfer, process mode). Every round a worker moves
// an amount between two of -accounts accounts, each account its own lock:
//
//  1. it acquires both accounts' leases, the lower account id first (a fixed order, so
//     two transfers never wait for each other's second lock); the transaction carries
//     the LARGER of the two tokens: tokens come from one sequence shared by all keys, so
//     a row last written under the other lock (with that lock's token) refuses a smaller
//     one, and every later holder of either lock gets a token larger than both;
//  2. in one transaction bound to that token it claims both rows (in id order), reads
//     both balances and records a read per account in the history;
//  3. it checks both leases (lease.Err), computes for -work, then
//  4. in one transaction bound to the same token writes both balances (debit, credit)
//     and the two ledger entries of the transfer — one history row per account, its
//     balance before and after — so the rows and their ledger commit together or not at
//     all.
//
// A freeze between step 3 and step 4 makes the late writer: without fencing its write
// overwrites balances that newer holders moved meanwhile, so money appears or
// disappears and the accounts' ledger chains break; with fencing the database refuses
// it (ErrFenced) and the whole transaction rolls back. checkTransfers judges the
// history. Balances may go negative: the drill checks the bookkeeping, not overdrafts.

// Workloads of process mode (-workload).
const (
	workloadIncrement = "increment"
	workloadTransfer  = "transfer"
)

// transferInitial is every account's balance when a transfer run starts.
const transferInitial = 1000

// transferPlan is one round's transfer.
type transferPlan struct {
	from, to, amount int64
	work             time.Duration
}

// nextTransfer draws one round's transfer: two distinct accounts, an amount of 1 to
// 100 and the work time. It always draws the same number of values.
func nextTransfer(rng *rand.Rand, spec workerSpec) transferPlan {
	n := max(spec.Accounts, 2)
	from := 1 + rng.IntN(n)
	to := 1 + rng.IntN(n-1)
	if to >= from {
		to++
	}
	return transferPlan{from: int64(from), to: int64(to), amount: int64(1 + rng.IntN(100)),
		work: time.Duration(float64(spec.Work) * (0.5 + rng.Float64()))}
}

// transferRound is one transfer: acquire both leases, claim and read both rows
// (recorded), check both leases, compute, write both rows and their ledger entries,
// release.
func (w *procWorker) transferRound(ctx context.Context, att int64, p transferPlan) {
	lo, hi := min(p.from, p.to), max(p.from, p.to)
	var leases []*lockclient.Lease
	for _, acct := range []int64{lo, hi} {
		lease, err := w.client.Acquire(ctx, fmt.Sprintf("account:%d", acct))
		if err != nil {
			if ctx.Err() == nil {
				w.out.emit(procEvent{Ev: "error", Acct: acct, Att: att, Err: "acquire: " + err.Error()})
			}
			return
		}
		w.out.emit(procEvent{Ev: "grant", Acct: acct, Tok: lease.Token(), Att: att, Second: acct == hi})
		lostAt := make(chan int64, 1)
		go func() {
			<-lease.Lost()
			lostAt <- time.Now().UnixNano()
		}()
		defer w.release(ctx, lease, acct, att, lostAt) // the second lock is released first
		leases = append(leases, lease)
	}
	tok := max(leases[0].Token(), leases[1].Token())
	bound := fencedsql.WithToken(ctx, tok)
	if w.spec.Bind == "lease" {
		bound = bindLeases(ctx, leases[0], leases[1])
	}

	bal, err := w.readPair(bound, lo, hi, att, tok)
	if err != nil {
		switch {
		case errors.Is(err, fencedsql.ErrFenced):
			w.out.emit(procEvent{Ev: "read", Acct: lo, Tok: tok, Att: att, Out: outFenced})
		case ctx.Err() == nil:
			w.out.emit(procEvent{Ev: "error", Acct: lo, Tok: tok, Att: att, Err: "read: " + err.Error()})
		}
		return
	}
	ev := procEvent{Ev: "attempt", Acct: p.from, To: p.to, Tok: tok, Att: att, Amount: p.amount,
		Read: bal[p.from], Wrote: bal[p.from] - p.amount, ToRead: bal[p.to]}
	if errors.Join(leases[0].Err(), leases[1].Err()) != nil {
		ev.Out = outSkipped
		w.out.emit(ev)
		return
	}
	if !sleep(ctx, p.work) {
		return
	}
	after := map[int64]int64{p.from: bal[p.from] - p.amount, p.to: bal[p.to] + p.amount}
	err = w.writePair(bound, lo, hi, att, tok, bal, after)
	switch {
	case err == nil:
		ev.Out = outCommitted
	case errors.Is(err, fencedsql.ErrFenced):
		ev.Out = outFenced
	case errors.Is(err, lockclient.ErrLeaseLost):
		ev.Out = outRefused
	default:
		ev.Out, ev.Err = outError, err.Error()
	}
	w.out.emit(ev)
}

// bindLeases binds a transfer's transaction to its two leases with -bind lease
// (fencedsql.WithLeases): it carries the larger token, and every statement and Commit
// refuse once either lease is lost.
func bindLeases(ctx context.Context, a, b *lockclient.Lease) context.Context {
	return fencedsql.WithLeases(ctx, a, b)
}

// readPair claims accounts lo and hi (in that order) with the transaction's token, reads
// their balances and records a read per account, in one transaction.
func (w *procWorker) readPair(ctx context.Context, lo, hi, att int64, tok uint64) (map[int64]int64, error) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	bal := map[int64]int64{}
	for _, acct := range []int64{lo, hi} {
		if w.q.stamp != "" {
			if _, err := tx.ExecContext(ctx, w.q.stamp, acct); err != nil {
				return nil, err
			}
		}
		var b int64
		if err := tx.QueryRowContext(ctx, w.q.read, acct).Scan(&b); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, w.q.record, acct, w.spec.Index, att, "read", int64(tok), b, nil); err != nil {
			return nil, err
		}
		bal[acct] = b
	}
	return bal, tx.Commit()
}

// writePair writes both balances (lo first) and the transfer's two ledger entries (each
// account's balance before and after) in one transaction.
func (w *procWorker) writePair(ctx context.Context, lo, hi, att int64, tok uint64, before, after map[int64]int64) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	for _, acct := range []int64{lo, hi} {
		if _, err := tx.ExecContext(ctx, w.q.update, after[acct], acct); err != nil {
			return err
		}
	}
	for _, acct := range []int64{lo, hi} {
		if _, err := tx.ExecContext(ctx, w.q.record, acct, w.spec.Index, att, "write", int64(tok), before[acct], after[acct]); err != nil {
			return err
		}
	}
	return tx.Commit()
}
