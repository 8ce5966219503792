package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Interrupted operations (kept from red-team rt56c): a generator that interrupts a
// fenced operation inside a real server, while the statement runs, at a point chosen
// by a blocker transaction that holds what the operation needs (rows, the tombstone
// table, an uncommitted INSERT of the claimed key under an older token, the caller's
// next row, a row the caller's transaction holds: a deadlock), or at a random moment
// 0–8 ms after the start (the lazy checks, the session check, the inner statements,
// COMMIT). internal/faultdriver models faults in place of a statement; here the
// statement is sent and the server interrupts it. The caller runs a prelude write,
// the operation (with a savepoint it rolls back to on an error, or without), its next
// write, and commits or rolls back; or it runs the operation alone outside a
// transaction.
//
// Oracle: after a successful Commit the committed table and tombstones are exactly
// what an uninterrupted run of the statements that reported success leaves; on
// PostgreSQL, a Commit after the caller's ROLLBACK TO SAVEPOINT and a successful next
// write succeeds (InterruptSetup.SavepointKeepsTx); a Commit
// that failed NotCommitted (or a Rollback) leaves the state as before; an autocommit
// operation that succeeded is applied once, one that failed NotCommitted changed
// nothing; no error is ErrFenced or ErrSchema (every token is the newest); the pool
// answers afterwards.

// InterruptOp is one fenced operation of the generator. Query may hold #n, which
// InterruptSetup.IDs maps to the trial's keys.
type InterruptOp struct {
	Name, Query string
	// Read: sent as a query and its rows read (a locking read, or DELETE … RETURNING).
	Read bool
}

// claim reports a locking read, which the generator never runs outside a transaction.
func (op InterruptOp) claim() bool { return strings.Contains(op.Query, "FOR UPDATE") }

// InterruptSetup is what a dialect gives RunInterruptedOperations.
type InterruptSetup struct {
	// Raw is a plain pool on the test's database: the blocker, the interruptions, the
	// lock-wait polls.
	Raw *sql.DB
	// Pools holds the fenced pool of each interruption kind, limited to one
	// connection (so that SessionID names the connection the operation runs on), its
	// DSN carrying the kind's timeouts. Kinds lists the kinds the generator draws.
	Pools map[string]*sql.DB
	Kinds []string
	// RefKind names the pool the uninterrupted reference runs use.
	RefKind string
	// Ops are the operations; Prelude is the caller's write before the operation (the
	// row lock the "deadlock" kind makes the blocker wait for, with DeadlockLock); Cont
	// is its write after.
	Ops           []InterruptOp
	Prelude, Cont string
	DeadlockLock  string
	// Blockers maps a blocker's name to the statements its transaction runs before the
	// operation starts ("none": nothing; the interruption then comes at a random moment).
	Blockers map[string][]string
	// SessionID is the query answering the pool's connection's id; BlockedQuery, with
	// that id as its one argument, whether the connection waits for a lock now.
	SessionID, BlockedQuery string
	// Kill maps a kind to the statement (with %d for the session id) the raw pool sends
	// when the operation waits (or at the random moment); kinds without one are
	// interrupted by the server (their pool's timeouts, or the deadlock).
	Kill map[string]string
	// Pause maps a kind to the caller's idle time between the operation and its next
	// write (an idle-in-transaction timeout).
	Pause map[string]time.Duration
	// Reset puts the trial's rows in place; IDs maps a query's #n to the trial's keys,
	// Token is the caller's (the newest) token, Snap reports the table and its
	// tombstones (see InterruptSnapshot), relative to the trial's keys and tokens.
	Reset func(t *testing.T)
	IDs   func(q string) string
	Token func() uint64
	Snap  func(t *testing.T) string
	// SavepointKeepsTx: the database aborts the transaction on an error it answers
	// (dialect.TxAborter), so after the caller's ROLLBACK TO SAVEPOINT and a next write
	// that succeeded, Commit must succeed too (red-team rt56c F1: a cancelled second
	// statement of a two-statement write broke the transaction for good). Checked when
	// a blocker chose the moment (a random one may land on COMMIT itself).
	SavepointKeepsTx bool
	// InsertPool, when set, runs the blockers' INSERTs in a fenced transaction bound
	// to InsertToken() (older than Token); otherwise the raw blocker runs them.
	InsertPool  *sql.DB
	InsertToken func() uint64
}

// InterruptSnapshot formats the rows of accountsQ (id, balance, fence_token, version)
// and tombQ (id, fence_token), each run with args on raw, as one comparable string.
func InterruptSnapshot(t *testing.T, raw *sql.DB, accountsQ, tombQ string, args ...any) string {
	t.Helper()
	var b strings.Builder
	for i, q := range []string{accountsQ, tombQ} {
		if i == 1 {
			b.WriteString(" tomb")
		}
		rows, err := raw.Query(q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for rows.Next() {
			var v [4]int64
			dest := []any{&v[0], &v[1], &v[2], &v[3]}
			if i == 1 {
				dest = []any{&v[0], &v[2]}
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if i == 0 {
				fmt.Fprintf(&b, "[%d %d t%d v%d]", v[0], v[1], v[2], v[3])
			} else {
				fmt.Fprintf(&b, "[%d t%d]", v[0], v[2])
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return b.String()
}

// InterruptIDs maps q's #0 to #9 to base+0 to base+9.
func InterruptIDs(q string, base int64) string {
	for n := 9; n >= 0; n-- {
		q = strings.ReplaceAll(q, fmt.Sprintf("#%d", n), fmt.Sprint(base+int64(n)))
	}
	return q
}

// BadInterruptErr reports an error no interruption may give: ErrFenced or ErrSchema
// (every token of the generator is the newest, every table guarded).
func BadInterruptErr(err error) bool {
	return err != nil && (errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrSchema))
}

// Execer is a pool, a connection or a transaction.
type Execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// RunInterruptOp sends op's text q on x (a pool or a transaction) and reads a query's
// rows to the end.
func RunInterruptOp(ctx context.Context, x Execer, op InterruptOp, q string) error {
	return RunText(ctx, x, op.Read, q)
}

// RunText sends q on x: as a query whose rows it reads to the end and closes when
// read, as an Exec otherwise. The error is the first of the statement's, the rows'
// and Close's.
func RunText(ctx context.Context, x Execer, read bool, q string) error {
	if !read {
		_, err := x.ExecContext(ctx, q)
		return err
	}
	rows, err := x.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	err = rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

// interruptRefs are one operation's uninterrupted states: before, after the prelude
// with the operation and the next write, the operation only, the next write only,
// the prelude only, and the operation alone in autocommit.
type interruptRefs struct{ s0, both, opOnly, contOnly, prelude, auto string }

// RunInterruptedOperations runs the generator: trials drawn from k.Seed (an
// operation, a blocker, a kind, a caller mode) while within k.Iters and, unless
// FENCEDSQL_SCHEDULES_ITERS is set, within budget from the start (at least one trial);
// an operation's references are run when it is first drawn. The seed replays the
// draws, not the timing the interruption lands at.
func RunInterruptedOperations(t *testing.T, s *InterruptSetup, k ScheduleKnobs, budget time.Duration) {
	t.Helper()
	start := time.Now()
	refs := map[string]*interruptRefs{}
	refsOf := func(op InterruptOp) *interruptRefs {
		if r, ok := refs[op.Name]; ok {
			return r
		}
		r := &interruptRefs{}
		r.s0, r.both = s.reference(t, op, true, true, false)
		_, r.opOnly = s.reference(t, op, true, false, false)
		_, r.contOnly = s.reference(t, op, false, true, false)
		_, r.prelude = s.reference(t, op, false, false, false)
		if !op.claim() {
			_, r.auto = s.reference(t, op, true, false, true)
		}
		refs[op.Name] = r
		return r
	}
	blockers := make([]string, 0, len(s.Blockers))
	for name := range s.Blockers {
		blockers = append(blockers, name)
	}
	sort.Strings(blockers) // the draws must not depend on map order
	rng := rand.New(rand.NewSource(k.Seed))
	trials, interrupted := 0, 0
	for ; trials < k.Iters && (k.ItersSet || trials == 0 || time.Since(start) < budget); trials++ {
		op := s.Ops[rng.Intn(len(s.Ops))]
		kind := s.Kinds[rng.Intn(len(s.Kinds))]
		blk := blockers[rng.Intn(len(blockers))]
		mode := []string{"savepoint", "plain", "auto", "rollback"}[rng.Intn(4)]
		if mode == "auto" && op.claim() {
			mode = "savepoint"
		}
		randomAt := time.Duration(rng.Intn(8000)) * time.Microsecond
		name := fmt.Sprintf("#%d %s/%s/%s/%s", trials, op.Name, blk, kind, mode)
		if s.trial(t, k, name, op, kind, blk, mode, randomAt, refsOf(op)) {
			interrupted++
		}
	}
	t.Logf("%d trials, %d interrupted", trials, interrupted)
}

// reference returns the state before and after an uninterrupted run: the prelude, op
// when withOp, the next write when withCont, committed; or op alone in autocommit.
func (s *InterruptSetup) reference(t *testing.T, op InterruptOp, withOp, withCont, auto bool) (s0, after string) {
	t.Helper()
	s.Reset(t)
	s0 = s.Snap(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool := s.Pools[s.RefKind]
	if auto {
		if err := RunInterruptOp(fencedsql.WithToken(ctx, s.Token()), pool, op, s.IDs(op.Query)); err != nil {
			t.Fatalf("reference %s: %v", op.Name, err)
		}
		return s0, s.Snap(t)
	}
	tx, err := pool.BeginTx(fencedsql.WithToken(ctx, s.Token()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	steps := []struct {
		on bool
		op InterruptOp
	}{{true, InterruptOp{Name: "prelude", Query: s.Prelude}}, {withOp, op}, {withCont, InterruptOp{Name: "next write", Query: s.Cont}}}
	for _, st := range steps {
		if st.on {
			if err := RunInterruptOp(ctx, tx, st.op, s.IDs(st.op.Query)); err != nil {
				t.Fatalf("reference %s: %v", st.op.Name, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("reference commit: %v", err)
	}
	return s0, s.Snap(t)
}

// sessionID returns the id of pool's one connection (a terminated one is replaced on
// the second try).
func (s *InterruptSetup) sessionID(ctx context.Context, pool *sql.DB) (int64, error) {
	var id int64
	err := pool.QueryRowContext(ctx, s.SessionID).Scan(&id)
	if err != nil {
		err = pool.QueryRowContext(ctx, s.SessionID).Scan(&id)
	}
	return id, err
}

// interruptResult is what the caller saw.
type interruptResult struct{ opErr, contErr, commitErr error }

// caller runs the caller's side of a trial in mode on pool.
func (s *InterruptSetup) caller(ctx context.Context, pool *sql.DB, op InterruptOp, kind, mode string) (r interruptResult) {
	if mode == "auto" {
		r.opErr = RunInterruptOp(fencedsql.WithToken(ctx, s.Token()), pool, op, s.IDs(op.Query))
		return r
	}
	tx, err := pool.BeginTx(fencedsql.WithToken(ctx, s.Token()), nil)
	if err != nil {
		return interruptResult{err, err, err}
	}
	if _, err := tx.ExecContext(ctx, s.IDs(s.Prelude)); err != nil {
		r.opErr = fmt.Errorf("prelude: %w", err)
	}
	if mode == "savepoint" {
		_, _ = tx.ExecContext(ctx, "SAVEPOINT interrupted")
	}
	if r.opErr == nil {
		r.opErr = RunInterruptOp(ctx, tx, op, s.IDs(op.Query))
	}
	if r.opErr != nil && mode == "savepoint" {
		_, _ = tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT interrupted")
	}
	time.Sleep(s.Pause[kind])
	_, r.contErr = tx.ExecContext(ctx, s.IDs(s.Cont))
	if mode == "rollback" {
		if r.commitErr = tx.Rollback(); r.commitErr == nil {
			r.commitErr = errors.New("rolled back")
		}
	} else {
		r.commitErr = tx.Commit()
	}
	return r
}

// trial runs one trial and checks it; it reports whether something was interrupted.
func (s *InterruptSetup) trial(t *testing.T, k ScheduleKnobs, name string, op InterruptOp, kind, blk, mode string, randomAt time.Duration, ref *interruptRefs) bool {
	t.Helper()
	s.Reset(t)
	pool := s.Pools[kind]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id, err := s.sessionID(ctx, pool)
	if err != nil {
		t.Fatalf("%s: pool unusable: %v", name, err)
	}
	blocker, err := s.Raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback()
	inserter := blocker
	if s.InsertPool != nil {
		if inserter, err = s.InsertPool.BeginTx(fencedsql.WithToken(ctx, s.InsertToken()), nil); err != nil {
			t.Fatal(err)
		}
		defer inserter.Rollback()
	}
	for _, q := range s.Blockers[blk] {
		on := blocker
		if strings.HasPrefix(q, "INSERT") {
			on = inserter
		}
		if _, err := on.ExecContext(ctx, s.IDs(q)); err != nil {
			t.Fatalf("%s: blocker %s: %v", name, q, err)
		}
	}
	done := make(chan interruptResult, 1)
	go func() { done <- s.caller(ctx, pool, op, kind, mode) }()
	var r interruptResult
	acted, start := false, time.Now()
wait:
	for {
		select {
		case r = <-done:
			break wait
		case <-time.After(2 * time.Millisecond):
		}
		if acted {
			continue
		}
		var blocked bool
		_ = s.Raw.QueryRowContext(ctx, s.BlockedQuery, id).Scan(&blocked)
		if !blocked && !(blk == "none" && time.Since(start) > randomAt) {
			continue
		}
		acted = true
		if kill, ok := s.Kill[kind]; ok {
			_, _ = s.Raw.ExecContext(ctx, fmt.Sprintf(kill, id))
		}
		if kind == "deadlock" && blocked {
			// the blocker now waits for the prelude's row, which the caller holds
			go func() { _, _ = blocker.ExecContext(ctx, s.IDs(s.DeadlockLock)) }()
		}
		if k.ShowLog {
			t.Logf("%s: acted (blocked %v)", name, blocked)
		}
	}
	_ = blocker.Rollback()
	_ = inserter.Rollback()
	desc := s.check(t, name, mode, r, ref)
	if s.SavepointKeepsTx && mode == "savepoint" && blk != "none" && r.opErr != nil && r.contErr == nil && r.commitErr != nil && !strings.HasPrefix(fmt.Sprint(r.opErr), "prelude:") {
		t.Errorf("Commit refused after ROLLBACK TO SAVEPOINT and a successful next write: %s", desc)
	}
	intr := acted || r.opErr != nil || r.contErr != nil
	if intr && k.ShowLog {
		t.Log(desc)
	}
	var one int
	pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer pcancel()
	if err := pool.QueryRowContext(pctx, "SELECT 1").Scan(&one); err != nil {
		if err2 := pool.QueryRowContext(pctx, "SELECT 1").Scan(&one); err2 != nil {
			t.Errorf("%s: pool unusable after the interruption: %v / %v", name, err, err2)
		}
	}
	return intr
}

// check is the oracle (see the top of the file) for one trial's result r; it returns
// the trial's description.
func (s *InterruptSetup) check(t *testing.T, name, mode string, r interruptResult, ref *interruptRefs) string {
	t.Helper()
	got := s.Snap(t)
	outcome := func(err error) string {
		if err == nil {
			return "-"
		}
		return fencedsql.CommitOutcome(err).String()
	}
	desc := fmt.Sprintf("%s: opErr=%v [%s] contErr=%v [%s] commitErr=%v [%s]\n got  %s\n s0   %s\n both %s\n op   %s\n cont %s\n pre  %s\n auto %s",
		name, r.opErr, outcome(r.opErr), r.contErr, outcome(r.contErr), r.commitErr, outcome(r.commitErr),
		got, ref.s0, ref.both, ref.opOnly, ref.contOnly, ref.prelude, ref.auto)
	for _, err := range []error{r.opErr, r.contErr, r.commitErr} {
		if BadInterruptErr(err) {
			t.Errorf("wrong error for an interruption: %s", desc)
			break
		}
	}
	switch {
	case mode == "auto":
		if r.opErr == nil && got != ref.auto {
			t.Errorf("autocommit write succeeded, state is not its one run's: %s", desc)
		} else if r.opErr != nil && got != ref.s0 && fencedsql.CommitOutcome(r.opErr) == fencedsql.NotCommitted {
			t.Errorf("autocommit write failed NotCommitted, state changed: %s", desc)
		}
	case r.commitErr == nil && strings.HasPrefix(fmt.Sprint(r.opErr), "prelude:"):
		t.Logf("%s: prelude failed, state not compared", name)
	case r.commitErr == nil:
		want := ref.prelude
		switch {
		case r.opErr == nil && r.contErr == nil:
			want = ref.both
		case r.opErr == nil:
			want = ref.opOnly
		case r.contErr == nil:
			want = ref.contOnly
		}
		if got != want {
			t.Errorf("committed state differs from what the statements that reported success leave:\n want %s\n %s", want, desc)
		}
	case got != ref.s0 && (mode == "rollback" || fencedsql.CommitOutcome(r.commitErr) == fencedsql.NotCommitted):
		t.Errorf("Commit failed NotCommitted (or rolled back), state changed: %s", desc)
	}
	return desc
}
