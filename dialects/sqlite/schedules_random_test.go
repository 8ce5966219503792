package sqlite_test

// Randomized schedules on one SQLite file reached through several fenced *sql.DB
// handles and one plain connection (kept from red-team rt51c; no finding).
//
// A schedule: a fresh file with one guarded table (accounts, guard installed by
// schema.Check's Fix), in rollback-journal or WAL mode, opened through three fenced
// handles (_txlock=deferred or immediate, two connections each) and one plain
// connection; busy_timeout is short (300 ms) so that contention shows. Three workers run
// 25 operations each, concurrently, on keys 1..3, each under a token drawn fresh or
// reused (so some are stale against others): fenced transactions of 1–4 statements
// (INSERT, UPDATE, DELETE, key-changing UPDATE, ON CONFLICT DO UPDATE / DO NOTHING,
// REPLACE, INSERT … SELECT, range DELETE), with SAVEPOINT / ROLLBACK TO, short pauses and
// an occasional deliberate rollback; fenced autocommit statements; plain-connection
// INSERT / UPDATE / INSERT OR REPLACE / upsert / DELETE / key-changing UPDATE writing an
// explicit token (the guard judges them). The journal mode and _txlock follow from the
// schedule's seed (seed mod 4), so consecutive seeds cover all four combinations.
//
// Invariant (the checker): let commit order be the order in which Commit (or an
// autocommit statement) returned success; every committed operation that changed key
// k (an INSERT, an UPDATE or upsert that affected it, a DELETE that removed it, a
// key-changing UPDATE on both its keys) carries a token >= the largest token of every
// operation on k committed before it. After every commit the row of k exists exactly
// when the model says so, and carries the model's last token. Errors must be ErrFenced,
// ErrUnsupported, ErrNoToken, the guard's own refusal (plain connection), a duplicate
// key or SQLite's busy/locked contention error; any other fails the test.
//
// Knobs (environment; the defaults fit CI, at most about 15 s):
//
//	FENCEDSQL_SCHEDULES_SEED=n   replay: schedule i uses seed n+i (the default is
//	                             time-based; each failure prints its schedule's seed,
//	                             replayed alone with ITERS=1: the same journal mode,
//	                             _txlock and worker seeds, but the workers'
//	                             interleaving is the scheduler's, so a replay may
//	                             take another path; rerun it a few times)
//	FENCEDSQL_SCHEDULES_ITERS=n  schedules to run (default 8, and at most 10 s of them;
//	                             with ITERS set, no time limit)
//	FENCEDSQL_SCHEDULES_LOG=1    log every schedule's commit trace, not only a failing one
//
// A long run: FENCEDSQL_SCHEDULES_ITERS=200 go test -timeout 0 -count=1 -run
// 'TestSchedulesRandom' ./dialects/sqlite/

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

type schedOp struct {
	key   int64
	token uint64
	kind  string
	gone  bool // the op removed the key
}

type schedModel struct {
	mu    sync.Mutex
	hw    map[int64]uint64
	live  map[int64]uint64 // token of the live row
	trace []string
	bad   []string
}

func (m *schedModel) apply(tag string, ops []schedOp) {
	for _, o := range ops {
		if o.token < m.hw[o.key] {
			m.bad = append(m.bad, fmt.Sprintf("%s: %s of key %d committed under token %d after token %d", tag, o.kind, o.key, o.token, m.hw[o.key]))
		}
		if o.token > m.hw[o.key] {
			m.hw[o.key] = o.token
		}
		if o.gone {
			delete(m.live, o.key)
		} else {
			m.live[o.key] = o.token
		}
	}
	m.trace = append(m.trace, fmt.Sprintf("%s %+v", tag, ops))
}

func schedAllowed(err error) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrNoToken) {
		return true
	}
	s := err.Error()
	for _, ok := range []string{"SQLITE_BUSY", "database is locked", "UNIQUE constraint failed", "SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE", "tx is closed", "transaction has already been committed or rolled back", "(5)", "(517)", "(261)", "(262)", "(6)"} {
		if strings.Contains(s, ok) {
			return true
		}
	}
	if strings.Contains(s, sqlite.TombstoneMessagePrefix) || strings.Contains(s, "fencedsql: guard on accounts") {
		return true
	}
	return false
}

func schedBusy(err error) bool {
	s := err.Error()
	return strings.Contains(s, "SQLITE_BUSY") || strings.Contains(s, "database is locked") || strings.Contains(s, "(5)") || strings.Contains(s, "(517)") || strings.Contains(s, "(261)") || strings.Contains(s, "(262)") || strings.Contains(s, "(6)")
}

type schedRun struct {
	t     *testing.T
	ctx   context.Context
	dbs   []*sql.DB
	plain *sql.DB
	m     *schedModel
	tokMu sync.Mutex
	next  uint64
	seen  []uint64
	odd   []string // unexpected errors
	keys  int64
	errs  map[string]int
	errMu sync.Mutex
}

func (r *schedRun) token(rng *rand.Rand) uint64 {
	r.tokMu.Lock()
	defer r.tokMu.Unlock()
	if len(r.seen) > 0 && rng.Intn(3) == 0 {
		return r.seen[rng.Intn(len(r.seen))]
	}
	r.next++
	r.seen = append(r.seen, r.next)
	return r.next
}

func (r *schedRun) tally(what string, err error) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.errs == nil {
		r.errs = map[string]int{}
	}
	e := err.Error()
	if len(e) > 90 {
		e = e[:90]
	}
	r.errs[strings.Fields(what)[0]+": "+e]++
}

func (r *schedRun) oddErr(what string, err error) {
	r.errMu.Lock()
	r.odd = append(r.odd, fmt.Sprintf("%s: %v", what, err))
	r.errMu.Unlock()
}

type schedExecer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

// fencedOp runs one random fenced operation and returns its effects (if it succeeded).
func (r *schedRun) fencedOp(ctx context.Context, ex schedExecer, rng *rand.Rand, tok uint64) ([]schedOp, error, string) {
	k := rng.Int63n(r.keys) + 1
	k2 := rng.Int63n(r.keys) + 1
	var q string
	var args []any
	kind := ""
	switch rng.Intn(9) {
	case 0:
		kind, q, args = "INSERT", "INSERT INTO accounts (id, balance) VALUES (?, ?)", []any{k, rng.Intn(100)}
	case 1:
		kind, q, args = "UPDATE", "UPDATE accounts SET balance = balance + 1 WHERE id = ?", []any{k}
	case 2:
		kind, q, args = "DELETE", "DELETE FROM accounts WHERE id = ?", []any{k}
	case 3:
		kind, q, args = "UPSERT", "INSERT INTO accounts (id, balance) VALUES (?, 1) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance + accounts.balance", []any{k}
	case 4:
		kind, q, args = "UPSERTNOTHING", "INSERT INTO accounts (id, balance) VALUES (?, 1) ON CONFLICT DO NOTHING", []any{k}
	case 5:
		kind, q, args = "REKEY", "UPDATE accounts SET id = ? WHERE id = ?", []any{k2, k}
	case 6:
		kind, q, args = "REPLACE", "REPLACE INTO accounts (id, balance) VALUES (?, 5)", []any{k}
	case 7:
		kind, q, args = "DELETEALL", "DELETE FROM accounts WHERE id >= ?", []any{k}
	case 8:
		kind, q, args = "INSERTSEL", "INSERT INTO accounts (id, balance) SELECT ?, 3 WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE id = ?)", []any{k, k}
	}
	// Which keys exist before (read through the same executor for the tx's view).
	before := map[int64]bool{}
	if qr, ok := ex.(interface {
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	}); ok && (kind == "DELETEALL") {
		rows, err := qr.QueryContext(ctx, "SELECT id FROM accounts WHERE id >= ?", k)
		if err != nil {
			return nil, err, kind
		}
		for rows.Next() {
			var id int64
			_ = rows.Scan(&id)
			before[id] = true
		}
		rows.Close()
	}
	res, err := ex.ExecContext(ctx, q, args...)
	if err != nil {
		return nil, err, fmt.Sprintf("%s %v", kind, args)
	}
	n, _ := res.RowsAffected()
	var ops []schedOp
	switch kind {
	case "INSERT", "UPDATE", "UPSERT", "UPSERTNOTHING", "REPLACE", "INSERTSEL":
		if n > 0 {
			ops = append(ops, schedOp{key: k, token: tok, kind: kind})
		}
	case "DELETE":
		if n > 0 {
			ops = append(ops, schedOp{key: k, token: tok, kind: kind, gone: true})
		}
	case "REKEY":
		if n > 0 && k != k2 {
			ops = append(ops, schedOp{key: k, token: tok, kind: kind, gone: true}, schedOp{key: k2, token: tok, kind: kind})
		} else if n > 0 {
			ops = append(ops, schedOp{key: k, token: tok, kind: kind})
		}
	case "DELETEALL":
		if int(n) != len(before) {
			// the set may change under another writer only if a lock was not held; note it
			ops = nil
		}
		for id := range before {
			ops = append(ops, schedOp{key: id, token: tok, kind: kind, gone: true})
		}
	}
	return ops, nil, fmt.Sprintf("%s %v", kind, args)
}

func (r *schedRun) worker(seed int64, iters int) {
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < iters; i++ {
		tok := r.token(rng)
		ctx := fencedsql.WithToken(r.ctx, tok)
		if rng.Intn(6) == 0 {
			r.plainOp(rng, tok)
			continue
		}
		db := r.dbs[rng.Intn(len(r.dbs))]
		if rng.Intn(4) == 0 { // autocommit fenced statement
			r.m.mu.Lock()
			ops, err, what := r.fencedOp(ctx, db, rng, tok)
			if err == nil {
				r.m.apply(fmt.Sprintf("auto tok=%d %s", tok, what), ops)
				r.verify()
			}
			r.m.mu.Unlock()
			if !schedAllowed(err) {
				r.oddErr(what, err)
			}
			continue
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			if !schedAllowed(err) {
				r.oddErr("begin", err)
			}
			continue
		}
		var all []schedOp
		var trace []string
		failed := false
		sp := -1
		nops := 1 + rng.Intn(4)
		for j := 0; j < nops; j++ {
			if sp < 0 && rng.Intn(5) == 0 {
				if _, err := tx.ExecContext(ctx, "SAVEPOINT sp"); err == nil {
					sp = len(all)
					trace = append(trace, "SAVEPOINT")
				} else if !schedAllowed(err) {
					r.oddErr("savepoint", err)
				}
			}
			ops, err, what := r.fencedOp(ctx, tx, rng, tok)
			trace = append(trace, what)
			if err != nil {
				r.tally(what, err)
				if !schedAllowed(err) {
					r.oddErr(what, err)
				}
				failed = true
				break
			}
			all = append(all, ops...)
			if rng.Intn(3) == 0 {
				time.Sleep(time.Duration(rng.Intn(3)) * time.Millisecond)
			}
			if sp >= 0 && rng.Intn(4) == 0 {
				if _, err := tx.ExecContext(ctx, "ROLLBACK TO sp"); err == nil {
					all = all[:sp]
					sp = -1
					trace = append(trace, "ROLLBACK TO")
				} else if !schedAllowed(err) {
					r.oddErr("rollback to", err)
				}
			}
		}
		if failed || rng.Intn(8) == 0 {
			_ = tx.Rollback()
			continue
		}
		r.m.mu.Lock()
		err = tx.Commit()
		if err == nil {
			r.m.apply(fmt.Sprintf("tx tok=%d %v", tok, trace), all)
			r.verify()
		}
		r.m.mu.Unlock()
		if err != nil && !schedAllowed(err) {
			r.oddErr("commit", err)
		}
	}
}

// plainOp writes on the plain connection with an explicit token (the guard judges it).
func (r *schedRun) plainOp(rng *rand.Rand, tok uint64) {
	k := rng.Int63n(r.keys) + 1
	var q string
	var args []any
	kind := ""
	k2 := rng.Int63n(r.keys) + 1
	switch rng.Intn(6) {
	case 4:
		kind, q, args = "pDELETE", "DELETE FROM accounts WHERE id = ?", []any{k}
	case 5:
		kind, q, args = "pREKEY", "UPDATE accounts SET id = ?, fence_token = ?, version = version + 1 WHERE id = ?", []any{k2, tok, k}
	case 0:
		kind, q, args = "pINSERT", "INSERT INTO accounts (id, balance, fence_token, version) VALUES (?, 1, ?, 1)", []any{k, tok}
	case 1:
		kind, q, args = "pUPDATE", "UPDATE accounts SET balance = balance + 1, fence_token = ?, version = version + 1 WHERE id = ?", []any{tok, k}
	case 2:
		kind, q, args = "pREPLACE", "INSERT OR REPLACE INTO accounts (id, balance, fence_token, version) VALUES (?, 2, ?, 1)", []any{k, tok}
	case 3:
		kind, q, args = "pUPSERT", "INSERT INTO accounts (id, balance, fence_token, version) VALUES (?, 2, ?, 1) ON CONFLICT (id) DO UPDATE SET fence_token = excluded.fence_token, version = accounts.version + 1", []any{k, tok}
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	res, err := r.plain.ExecContext(r.ctx, q, args...)
	if err != nil {
		if !schedAllowed(err) {
			r.oddErr(fmt.Sprintf("%s %v", kind, args), err)
		}
		return
	}
	if n, _ := res.RowsAffected(); n > 0 {
		ops := []schedOp{{key: k, token: tok, kind: kind}}
		switch {
		case kind == "pDELETE":
			// a plain DELETE carries no token of its own: the deleted row's
			ops = []schedOp{{key: k, token: r.m.live[k], kind: kind, gone: true}}
		case kind == "pREKEY" && k2 != k:
			ops = []schedOp{{key: k, token: tok, kind: kind, gone: true}, {key: k2, token: tok, kind: kind}}
		}
		r.m.apply(fmt.Sprintf("plain tok=%d %s %v", tok, kind, args), ops)
		r.verify()
	}
}

// verify compares the file with the model (under m.mu).
func (r *schedRun) verify() {
	rows, err := r.plain.QueryContext(r.ctx, "SELECT id, fence_token FROM accounts")
	if err != nil {
		if !schedBusy(err) {
			r.oddErr("verify", err)
		}
		return
	}
	defer rows.Close()
	got := map[int64]uint64{}
	for rows.Next() {
		var id int64
		var tk uint64
		if err := rows.Scan(&id, &tk); err != nil {
			r.oddErr("verify scan", err)
			return
		}
		got[id] = tk
	}
	for k, tk := range r.m.live {
		if g, ok := got[k]; !ok || g != tk {
			r.m.bad = append(r.m.bad, fmt.Sprintf("after %s: key %d is %v(%v), model says live at %d", r.m.trace[len(r.m.trace)-1], k, g, ok, tk))
		}
	}
	for k, g := range got {
		if _, ok := r.m.live[k]; !ok {
			r.m.bad = append(r.m.bad, fmt.Sprintf("after %s: key %d present at token %d, model says absent", r.m.trace[len(r.m.trace)-1], k, g))
		}
	}
	// resync to the file so one discrepancy is reported once
	r.m.live = got
	for k, g := range got {
		if g > r.m.hw[k] {
			r.m.hw[k] = g
		}
	}
}

// schedConfigs are the journal modes and _txlock values; a schedule's seed picks one.
var schedConfigs = []struct{ journal, txlock string }{
	{"delete", "deferred"}, {"delete", "immediate"}, {"wal", "deferred"}, {"wal", "immediate"},
}

// schedOpsPerWorker is the number of operations each of the three workers runs.
const schedOpsPerWorker = 25

// runSchedule runs one schedule (the file's leading comment) with seed and fails t on
// any violation or unexpected error, naming the seed.
func runSchedule(t *testing.T, seed int64, showLog bool) {
	cfg := schedConfigs[int(uint64(seed)%uint64(len(schedConfigs)))]
	replay := fmt.Sprintf("seed %d (%s journal, _txlock=%s; replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=1)", seed, cfg.journal, cfg.txlock, seed)
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	file := strings.Replace(testdb.SQLite(t), "busy_timeout(5000)", "busy_timeout(300)", 1)
	raw := testdb.Open(t, "sqlite", file, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	raw.SetMaxOpenConns(1)
	if cfg.journal == "wal" {
		testdb.Exec(t, raw, "PRAGMA journal_mode=WAL")
	}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatalf("%s: %v", replay, err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	r := &schedRun{t: t, ctx: ctx, plain: raw, keys: 3, m: &schedModel{hw: map[int64]uint64{}, live: map[int64]uint64{}}}
	for i := 0; i < 3; i++ {
		db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts&_txlock="+cfg.txlock)
		db.SetMaxOpenConns(2)
		r.dbs = append(r.dbs, db)
	}
	rng := rand.New(rand.NewSource(seed))
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wseed := rng.Int63()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.worker(wseed, schedOpsPerWorker)
		}()
	}
	wg.Wait()
	for _, o := range r.odd {
		t.Errorf("%s: unexpected error: %s", replay, o)
	}
	for _, b := range r.m.bad {
		t.Errorf("%s: VIOLATION: %s", replay, b)
	}
	t.Logf("%s: %d commits; errors %v", replay, len(r.m.trace), r.errs)
	if t.Failed() || showLog {
		for _, tr := range r.m.trace {
			t.Log(tr)
		}
	}
}

// schedDefaultBudget bounds the default run's time (CI); with ITERS set there is none.
const schedDefaultBudget = 10 * time.Second

// TestSchedulesRandom runs randomized concurrent schedules of fenced and plain writes on
// one SQLite file and checks that tokens never go back and the file matches the model
// (the file's leading comment; knobs FENCEDSQL_SCHEDULES_*).
func TestSchedulesRandom(t *testing.T) {
	env := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 8)
	seed, iters, itersSet, showLog := env.Seed, env.Iters, env.ItersSet, env.ShowLog
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d), %d schedules", seed, seed, iters)
	start := time.Now()
	for it := 0; it < iters; it++ {
		if !itersSet && time.Since(start) > schedDefaultBudget {
			t.Logf("time budget %v reached after %d schedules", schedDefaultBudget, it)
			break
		}
		s := seed + int64(it)
		cfg := schedConfigs[int(uint64(s)%uint64(len(schedConfigs)))]
		t.Run(fmt.Sprintf("%s-%s-seed%d", cfg.journal, cfg.txlock, s), func(t *testing.T) {
			runSchedule(t, s, showLog)
		})
	}
}
