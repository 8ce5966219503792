package fencedpgx_test

// Randomized sequences of writes to a guarded table through every surface of fencedpgx
// (kept from red-team rt51c; no finding).
//
// TestSequencesRandom: single-threaded sequences of 150 units on a fresh database (one
// guarded table, accounts, keys 1..3), each under a token drawn fresh or reused (so some
// are stale): Pool.Exec / Query with a per-call QueryExecMode (all five) or none,
// pgx.NamedArgs, Tx at READ COMMITTED, REPEATABLE READ or SERIALIZABLE with nested Begin
// (savepoints) rolled back or released, also after ErrFenced, SendBatch on the pool and
// in a Tx, CopyFrom (must be refused ErrUnsupported), multi-statement simple-protocol
// strings, claims (SELECT … FOR UPDATE) of present and absent keys, MERGE, and plain
// writes with an explicit token on a raw pool; the fenced pool has an AfterConnect hook.
// A transaction that met an error is committed anyway: that Commit must change nothing.
//
// TestPausedStaleTxRandom: sequences of 50 interleavings on a fresh database: an older
// holder's transaction (random isolation level) takes its snapshot, pauses while a newer
// holder changes a key and commits, then writes through a random surface (Exec with a
// mode, nested Begin, SendBatch in the Tx) and commits.
//
// Checker (state diff; each sequence is single-threaded): after each top-level unit that
// the wrapper reported committed (an autocommit call returning nil, a Commit returning
// nil, a batch whose Close returned nil), every key whose row changed (appeared,
// disappeared, or changed token/version/balance) must have been changed under a token
// >= the largest token under which that key was changed, or claimed, before, and a row
// it wrote carries its token. A unit reported failed must change nothing. Errors must be
// typed (ErrFenced, ErrUnsupported, ErrNoToken) or a plain SQL error of the statement
// (duplicate key, statement in an aborted transaction); for the paused holder also
// PostgreSQL's serialization failure or deadlock (40001, 40P01).
//
// Knobs (environment; the defaults fit CI, at most about 10 s per test):
//
//	FENCEDSQL_SCHEDULES_SEED=n   replay: sequence i uses seed n+i (the default is
//	                             time-based; each failure prints its sequence's seed,
//	                             replayed alone — and exactly — with ITERS=1)
//	FENCEDSQL_SCHEDULES_ITERS=n  sequences to run per test (default 4 for
//	                             TestSequencesRandom, 3 for TestPausedStaleTxRandom, and
//	                             at most 8 s of them; with ITERS set, no time limit)
//	FENCEDSQL_SCHEDULES_LOG=1    log every sequence's units, not only a failing one
//
// A long run: FENCEDSQL_SCHEDULES_ITERS=100 go test -timeout 0 -count=1 -run
// 'TestSequencesRandom|TestPausedStaleTxRandom' ./fencedsql/fencedpgx/
//
// TestQueryRewriterChainsStayFenced (deterministic, no knobs) keeps rt51c's probe of
// chained pgx.QueryRewriters in a batch and in Exec (held: refused or fenced).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	fschema "github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

type seqRow struct{ bal, tok, ver int64 }

type seqRun struct {
	t     *testing.T
	ctx   context.Context
	raw   *pgxpool.Pool
	db    *fencedpgx.Pool
	hw    map[int64]uint64
	state map[int64]seqRow
	bad   []string
	odd   []string
	log   []string
	next  uint64
}

func (r *seqRun) snapshot() map[int64]seqRow {
	rows, err := r.raw.Query(r.ctx, "SELECT id, balance, fence_token, version FROM accounts")
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]seqRow{}
	for rows.Next() {
		var id int64
		var w seqRow
		if err := rows.Scan(&id, &w.bal, &w.tok, &w.ver); err != nil {
			r.t.Fatal(err)
		}
		out[id] = w
	}
	return out
}

func seqAllowed(err error) bool {
	if err == nil || errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrNoToken) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "25P02") {
		return true
	}
	return false
}

// settle checks the unit's effect: committed says whether the wrapper reported success.
func (r *seqRun) settle(what string, tok uint64, committed bool, claimed []int64) {
	after := r.snapshot()
	changed := map[int64]bool{}
	for k, a := range after {
		if b, ok := r.state[k]; !ok || a != b {
			changed[k] = true
		}
	}
	for k := range r.state {
		if _, ok := after[k]; !ok {
			changed[k] = true
		}
	}
	r.log = append(r.log, fmt.Sprintf("%s tok=%d committed=%v changed=%v", what, tok, committed, changed))
	for k := range changed {
		if !committed {
			r.bad = append(r.bad, fmt.Sprintf("%s (tok %d): reported failed but key %d changed (%v -> %v)", what, tok, k, r.state[k], after[k]))
			continue
		}
		if tok < r.hw[k] {
			r.bad = append(r.bad, fmt.Sprintf("%s (tok %d): key %d changed after a change/claim under %d (%v -> %v)", what, tok, k, r.hw[k], r.state[k], after[k]))
		}
		if a, ok := after[k]; ok && uint64(a.tok) != tok && tok >= r.hw[k] {
			r.bad = append(r.bad, fmt.Sprintf("%s (tok %d): key %d written with token %d", what, tok, k, a.tok))
		}
		if tok > r.hw[k] {
			r.hw[k] = tok
		}
	}
	if committed {
		for _, k := range claimed {
			if tok > r.hw[k] {
				r.hw[k] = tok
			}
		}
	}
	r.state = after
}

func (r *seqRun) token(rng *rand.Rand) uint64 {
	if r.next > 2 && rng.Intn(2) == 0 {
		return uint64(rng.Int63n(int64(r.next))) + 1
	}
	r.next++
	return r.next
}

var seqModes = []any{nil, pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeCacheStatement}

// seqStmt draws a statement on keys 1..3 with its arguments (pgx placeholders).
func seqStmt(rng *rand.Rand) (string, []any, []int64) {
	k := rng.Int63n(3) + 1
	k2 := rng.Int63n(3) + 1
	switch rng.Intn(11) {
	case 0:
		return "INSERT INTO accounts (id, balance) VALUES ($1, 1)", []any{k}, nil
	case 1:
		return "UPDATE accounts SET balance = balance + 1 WHERE id = $1", []any{k}, nil
	case 2:
		return "DELETE FROM accounts WHERE id = $1", []any{k}, nil
	case 3:
		return "INSERT INTO accounts (id, balance) VALUES ($1, 2) ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + 1", []any{k}, nil
	case 4:
		return "INSERT INTO accounts (id, balance) VALUES ($1, 2) ON CONFLICT DO NOTHING", []any{k}, nil
	case 5:
		return "UPDATE accounts SET id = $1 WHERE id = $2", []any{k2, k}, nil
	case 6:
		return "SELECT id FROM accounts WHERE id = $1 FOR UPDATE", []any{k}, []int64{k}
	case 7:
		return "DELETE FROM accounts WHERE id >= $1", []any{k}, nil
	case 8:
		return "MERGE INTO accounts a USING (SELECT $1::bigint AS id) s ON a.id = s.id WHEN MATCHED THEN UPDATE SET balance = a.balance + 5 WHEN NOT MATCHED THEN INSERT (id, balance) VALUES (s.id, 5)", []any{k}, nil
	case 9:
		return "INSERT INTO accounts (id, balance) VALUES (@id, 7)", []any{pgx.NamedArgs{"id": k}}, nil
	default:
		return fmt.Sprintf("UPDATE accounts SET balance = balance + 1 WHERE id = %d; DELETE FROM accounts WHERE id = %d", k, k2), []any{pgx.QueryExecModeSimpleProtocol}, nil
	}
}

func seqWithMode(rng *rand.Rand, args []any) []any {
	m := seqModes[rng.Intn(len(seqModes))]
	if m == nil {
		return args
	}
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			return args
		}
	}
	return append([]any{m}, args...)
}

func (r *seqRun) step(rng *rand.Rand) {
	tok := r.token(rng)
	ctx := fencedsql.WithToken(r.ctx, tok)
	switch rng.Intn(6) {
	case 0: // autocommit
		q, args, cl := seqStmt(rng)
		args = seqWithMode(rng, args)
		var err error
		if strings.HasPrefix(q, "SELECT") {
			var rows pgx.Rows
			rows, err = r.db.Query(ctx, q, args...)
			if err == nil {
				for rows.Next() {
				}
				rows.Close()
				err = rows.Err()
			}
		} else {
			_, err = r.db.Exec(ctx, q, args...)
		}
		r.check(fmt.Sprintf("auto %q %v", q, args), err)
		r.settle(fmt.Sprintf("auto %q %v", q, args), tok, err == nil, cl)
	case 1, 2: // transaction with nested savepoints
		tx, err := r.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable}[rng.Intn(3)]})
		if err != nil {
			r.check("begin", err)
			return
		}
		what := "tx"
		var claimed []int64
		var cur pgx.Tx = tx
		var nest []pgx.Tx
		ok := true
		for j := 0; j < 1+rng.Intn(4); j++ {
			if rng.Intn(4) == 0 {
				sub, err := cur.Begin(ctx)
				if err != nil {
					r.check("nested begin", err)
					ok = false
					break
				}
				nest = append(nest, cur)
				cur = sub
				what += " [begin"
			}
			q, args, cl := seqStmt(rng)
			args = seqWithMode(rng, args)
			var err error
			if strings.HasPrefix(q, "SELECT") {
				var rows pgx.Rows
				rows, err = cur.Query(ctx, q, args...)
				if err == nil {
					for rows.Next() {
					}
					rows.Close()
					err = rows.Err()
				}
			} else {
				_, err = cur.Exec(ctx, q, args...)
			}
			what += fmt.Sprintf(" %q%v", q, args)
			if err != nil {
				r.check(what, err)
				what += fmt.Sprintf("->%v", err)
				if len(nest) > 0 && rng.Intn(2) == 0 {
					// roll the savepoint back and go on
					if err := cur.Rollback(ctx); err != nil {
						r.check("nested rollback", err)
					}
					cur = nest[len(nest)-1]
					nest = nest[:len(nest)-1]
					what += " rollback]"
					continue
				}
				ok = false
				break
			}
			claimed = append(claimed, cl...)
			if len(nest) > 0 && rng.Intn(3) == 0 {
				if rng.Intn(2) == 0 {
					err = cur.Rollback(ctx)
					what += " rollback]"
				} else {
					err = cur.Commit(ctx)
					what += " release]"
				}
				if err != nil {
					r.check(what, err)
				}
				cur = nest[len(nest)-1]
				nest = nest[:len(nest)-1]
			}
		}
		if rng.Intn(2) == 0 && ok {
			// a batch inside the transaction
			b := &pgx.Batch{}
			for j := 0; j < 1+rng.Intn(3); j++ {
				q, args, _ := seqStmt(rng)
				if len(args) > 0 {
					if _, isMode := args[0].(pgx.QueryExecMode); isMode {
						continue
					}
				}
				b.Queue(q, args...)
				what += fmt.Sprintf(" batch%q%v", q, args)
			}
			if len(b.QueuedQueries) > 0 {
				err := cur.SendBatch(ctx, b).Close()
				if err != nil {
					r.check(what, err)
					what += fmt.Sprintf("->%v", err)
					ok = false
				}
			}
		}
		if !ok {
			// Commit after a failure: must not commit anything fenced
			err := tx.Commit(ctx)
			r.settle(what+" commit-after-failure", tok, err == nil, nil)
			return
		}
		err = tx.Commit(ctx)
		r.check(what+" commit", err)
		r.settle(what, tok, err == nil, claimed)
	case 3: // batch on the pool
		b := &pgx.Batch{}
		what := "poolbatch"
		for j := 0; j < 1+rng.Intn(3); j++ {
			q, args, _ := seqStmt(rng)
			if len(args) > 0 {
				if _, isMode := args[0].(pgx.QueryExecMode); isMode {
					continue
				}
			}
			b.Queue(q, args...)
			what += fmt.Sprintf(" %q%v", q, args)
		}
		if len(b.QueuedQueries) == 0 {
			return
		}
		err := r.db.SendBatch(ctx, b).Close()
		r.check(what, err)
		r.settle(what, tok, err == nil, nil)
	case 4: // CopyFrom
		k := rng.Int63n(3) + 1
		_, err := r.db.CopyFrom(ctx, pgx.Identifier{"accounts"}, []string{"id", "balance", "fence_token"}, pgx.CopyFromRows([][]any{{k, 9, int64(tok)}}))
		if err == nil || !errors.Is(err, fencedsql.ErrUnsupported) {
			r.odd = append(r.odd, fmt.Sprintf("CopyFrom into the guarded table: %v", err))
		}
		r.settle("copy", tok, err == nil, nil)
	case 5: // plain connection with an explicit token
		k := rng.Int63n(3) + 1
		q := []string{
			"INSERT INTO accounts (id, balance, fence_token, version) VALUES ($1, 3, $2, 1)",
			"UPDATE accounts SET balance = balance + 1, fence_token = $2, version = version + 1 WHERE id = $1",
			"INSERT INTO accounts (id, balance, fence_token, version) VALUES ($1, 3, $2, 1) ON CONFLICT (id) DO UPDATE SET fence_token = excluded.fence_token, version = accounts.version + 1",
		}[rng.Intn(3)]
		_, err := r.raw.Exec(r.ctx, q, k, int64(tok))
		r.settle(fmt.Sprintf("plain %q k=%d", q, k), tok, err == nil, nil)
	}
}

func (r *seqRun) check(what string, err error) {
	if !seqAllowed(err) {
		r.odd = append(r.odd, fmt.Sprintf("%s: %T %v", what, err, err))
	}
}

// seqKnobs are the FENCEDSQL_SCHEDULES_* variables (the file's leading comment).
type seqKnobs struct {
	seed     int64
	iters    int
	itersSet bool
	showLog  bool
}

func seqKnobsFromEnv(t *testing.T, defaultIters int) seqKnobs {
	t.Helper()
	env := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), defaultIters)
	return seqKnobs{seed: env.Seed, iters: env.Iters, itersSet: env.ItersSet, showLog: env.ShowLog}
}

// seqDefaultBudget bounds the default run's time (CI); with ITERS set there is none.
const seqDefaultBudget = 8 * time.Second

// eachSequence runs one subtest per sequence (seed k.seed+i), within the default budget.
func (k seqKnobs) eachSequence(t *testing.T, run func(t *testing.T, seed int64, replay string)) {
	t.Helper()
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d), %d sequences", k.seed, k.seed, k.iters)
	start := time.Now()
	for i := 0; i < k.iters; i++ {
		if !k.itersSet && time.Since(start) > seqDefaultBudget {
			t.Logf("time budget %v reached after %d sequences", seqDefaultBudget, i)
			break
		}
		seed := k.seed + int64(i)
		replay := fmt.Sprintf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=1)", seed, seed)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { run(t, seed, replay) })
	}
}

// seqEnv makes a fresh database with accounts guarded and returns a context bounding
// the sequence, a raw pool (two connections, for plain writes and snapshots) and a pool
// of maxConns fenced on accounts, whose connections run an AfterConnect hook when hook
// is true.
func seqEnv(t *testing.T, maxConns int32, hook bool) (context.Context, *pgxpool.Pool, *fencedpgx.Pool) {
	t.Helper()
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 85*time.Second)
	t.Cleanup(cancel)
	raw := openPool(t, ctx, dsn, 2)
	if _, err := raw.Exec(ctx, plainAccounts); err != nil {
		t.Fatal(err)
	}
	std, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer std.Close()
	fencetest.Guard(t, ctx, std, postgres.Dialect, fschema.GuardSpec{Table: "accounts"})
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	if hook {
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, "SET application_name = 'fencedsql-sequences'")
			return err
		}
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	db, err := fencedpgx.New(p, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return ctx, raw, db
}

// report fails t with every unexpected error and violation of the sequence, naming its
// seed, and logs the units when it failed or showLog is set.
func (r *seqRun) report(t *testing.T, replay string, showLog bool) {
	t.Helper()
	for _, o := range r.odd {
		t.Errorf("%s: unexpected: %s", replay, o)
	}
	for _, b := range r.bad {
		t.Errorf("%s: VIOLATION: %s", replay, b)
	}
	if t.Failed() || showLog {
		for _, l := range r.log {
			t.Log(l)
		}
	}
}

// seqUnits is the number of units of a TestSequencesRandom sequence.
const seqUnits = 150

func TestSequencesRandom(t *testing.T) {
	testdb.NeedServer(t, testdb.EnvPostgres, "PostgreSQL")
	k := seqKnobsFromEnv(t, 4)
	k.eachSequence(t, func(t *testing.T, seed int64, replay string) {
		ctx, raw, db := seqEnv(t, 2, true)
		const base = 1000
		if _, err := db.Exec(fencedsql.WithToken(ctx, base), "DELETE FROM accounts"); err != nil {
			t.Fatal(err)
		}
		r := &seqRun{t: t, ctx: ctx, raw: raw, db: db, hw: map[int64]uint64{}, state: map[int64]seqRow{}, next: base}
		r.state = r.snapshot()
		rng := rand.New(rand.NewSource(seed))
		for i := 0; i < seqUnits && ctx.Err() == nil; i++ {
			r.step(rng)
		}
		if err := ctx.Err(); err != nil {
			t.Errorf("%s: sequence cut short: %v", replay, err)
		}
		nc, ne := 0, 0
		for _, l := range r.log {
			if strings.Contains(l, "committed=true changed=map[") && !strings.Contains(l, "changed=map[]") {
				nc++
			}
			if strings.Contains(l, "->") {
				ne++
			}
		}
		t.Logf("%s: %d units, %d changed something, %d with an error inside", replay, len(r.log), nc, ne)
		r.report(t, replay, k.showLog)
	})
}

// seqPausedRounds is the number of interleavings of a TestPausedStaleTxRandom sequence.
const seqPausedRounds = 50

// TestPausedStaleTxRandom: a holder's transaction (random isolation) takes its
// snapshot, pauses while a newer holder changes a key and commits, then writes through
// a random surface (Exec with a mode, nested Begin, SendBatch in the Tx) and commits.
// Checker as above: nothing the older holder commits changes a key after the newer
// holder's change of it.
func TestPausedStaleTxRandom(t *testing.T) {
	testdb.NeedServer(t, testdb.EnvPostgres, "PostgreSQL")
	k := seqKnobsFromEnv(t, 3)
	k.eachSequence(t, func(t *testing.T, seed int64, replay string) {
		ctx, raw, db := seqEnv(t, 3, false)
		r := &seqRun{t: t, ctx: ctx, raw: raw, db: db, hw: map[int64]uint64{}, state: map[int64]seqRow{}}
		rng := rand.New(rand.NewSource(seed))
		for i := 0; i < seqPausedRounds && ctx.Err() == nil; i++ {
			r.pausedRound(rng)
		}
		if err := ctx.Err(); err != nil {
			t.Errorf("%s: sequence cut short: %v", replay, err)
		}
		t.Logf("%s: %d units", replay, len(r.log))
		r.report(t, replay, k.showLog)
	})
}

// pausedRound is one interleaving of TestPausedStaleTxRandom.
func (r *seqRun) pausedRound(rng *rand.Rand) {
	t, ctx, db := r.t, r.ctx, r.db
	r.next += 10
	a := r.next
	b := a + 5
	r.next = b
	iso := []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable}[rng.Intn(3)]
	ta, err := db.BeginTx(fencedsql.WithToken(ctx, a), pgx.TxOptions{IsoLevel: iso})
	if err != nil {
		t.Fatal(err)
	}
	var one int
	_ = ta.QueryRow(ctx, "SELECT count(*) FROM accounts").Scan(&one)
	// B: a newer holder changes a key and commits.
	qb, argsb, _ := seqStmt(rng)
	_, errb := db.Exec(fencedsql.WithToken(ctx, b), qb, argsb...)
	r.check("B "+qb, errb)
	r.settle(fmt.Sprintf("B %q %v", qb, argsb), b, errb == nil, nil)
	// A resumes.
	what := fmt.Sprintf("A(%s) ", iso)
	ok := true
	actx := fencedsql.WithToken(ctx, a)
	switch rng.Intn(3) {
	case 0:
		q, args, _ := seqStmt(rng)
		args = seqWithMode(rng, args)
		_, err = ta.Exec(actx, q, args...)
		what += fmt.Sprintf("%q%v", q, args)
	case 1:
		sub, err2 := ta.Begin(actx)
		if err2 != nil {
			err = err2
			break
		}
		q, args, _ := seqStmt(rng)
		_, err = sub.Exec(actx, q, args...)
		what += fmt.Sprintf("nested %q%v", q, args)
		if err == nil {
			err = sub.Commit(actx)
		}
	case 2:
		bt := &pgx.Batch{}
		for j := 0; j < 2; j++ {
			q, args, _ := seqStmt(rng)
			if len(args) > 0 {
				if _, isMode := args[0].(pgx.QueryExecMode); isMode {
					continue
				}
			}
			bt.Queue(q, args...)
			what += fmt.Sprintf("batch %q%v ", q, args)
		}
		if len(bt.QueuedQueries) > 0 {
			err = ta.SendBatch(actx, bt).Close()
		}
	}
	if err != nil {
		var pe *pgconn.PgError
		if !(errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")) {
			r.check(what, err)
		}
		ok = false
		what += fmt.Sprintf("->%v", err)
	}
	err = ta.Commit(ctx)
	if ok && err != nil {
		var pe *pgconn.PgError
		if !(errors.As(err, &pe) && pe.Code == "40001") {
			r.check(what+" commit", err)
		}
	}
	r.settle(what, a, err == nil, nil)
}

type passRewriter struct{}

func (passRewriter) RewriteQuery(ctx context.Context, conn *pgx.Conn, sql string, args []any) (string, []any, error) {
	return sql, args, nil
}

// A stale write whose arguments chain several pgx.QueryRewriters (a pass-through
// rewriter, as a tracing layer might add, before or after pgx.NamedArgs), queued in a
// batch or sent with Exec: pgx's batch applies the last leading rewriter, fencedpgx's
// batch the first; either way the write is refused (ErrUnsupported: a rewriter left in
// the arguments) or fenced, and the row written under 50 is unchanged.
func TestQueryRewriterChainsStayFenced(t *testing.T) {
	ctx, raw, db := freshPG(t, plainAccounts+"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 50, 1), (2, 100, 50, 1);")
	std, _ := sql.Open("pgx", fencetest.WithParam(raw.Config().ConnString(), ""))
	defer std.Close()
	fencetest.Guard(t, ctx, std, postgres.Dialect, fschema.GuardSpec{Table: "accounts"})
	for i, args := range [][]any{
		{passRewriter{}, pgx.NamedArgs{"id": 1}},
		{pgx.NamedArgs{"id": 1}, passRewriter{}},
		{passRewriter{}, passRewriter{}, int64(1)},
	} {
		b := &pgx.Batch{}
		b.Queue("UPDATE accounts SET balance = 0 WHERE id = @id", args...)
		err := db.SendBatch(tok(ctx, 10), b).Close()
		if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("batch %d: %v, want ErrFenced or ErrUnsupported", i, err)
		}
		_, err = db.Exec(tok(ctx, 10), "UPDATE accounts SET balance = 0 WHERE id = @id", args...)
		if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("exec %d: %v, want ErrFenced or ErrUnsupported", i, err)
		}
		var bal, tk int64
		if err := raw.QueryRow(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tk); err != nil || bal != 100 || tk != 50 {
			t.Fatalf("after %d: row 1 = %d %d (%v), want 100 50", i, bal, tk, err)
		}
	}
}
