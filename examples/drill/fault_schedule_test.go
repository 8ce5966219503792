package main

// TestFaultScheduleMoneyConserved: a randomized fault schedule over real worker
// PROCESSES (the test binary re-executed, see TestMain) moving money between accounts,
// each account under its own lock, each worker reaching the database and the lock
// service through loopback proxies of its own (red-team rt53b). Four set-ups:
// PostgreSQL + redislock (a redis-server of the test's own) bound with WithLeases;
// PostgreSQL + sqllock bound with WithToken; MariaDB/MySQL + sqllock (lease);
// MariaDB/MySQL + redislock (token). The scheduler injects, at exponentially
// distributed times and aimed at a worker that has just claimed its rows or just begun
// its write transaction: SIGSTOP/SIGCONT for 1.5–3 TTLs; SIGKILL (a new process takes
// over the owner name); "replace" (the worker frozen and a new process with its owner
// name started, the old one thawed later); database partitions (drop: connections
// reset and new ones held; stall: bytes held and delivered late; one-way: the requests
// reach the server, the replies are lost, then the connection is reset); lock-service
// partitions (drop/stall); pg_terminate_backend of a worker's sessions; a "restart" of
// the database as its clients see it (every session of the run ended at once and new
// connections held 0.5 s; the shared server is not restarted); a restart of Redis
// without persistence (its token counter lost).
//
// Checker (checkTransfers plus the outcome rule): money is conserved; per account the
// ledger chains and its tokens never go backwards; no entry commits under a token older
// than one already committed (claimed or written) on the account; every acknowledged
// transfer is in the ledger, none refused (ErrFenced, ErrLeaseLost, skipped) is; a
// claim or transfer that CommitOutcome calls NotCommitted is not in the history. Its
// error tally found rt53b F1 (a check cut by a real lost connection reported as
// ErrSchema: fencedsql/check_cut_lost_conn_test.go).
//
// The short form (CI, about 15 s) runs one set-up, chosen by the seed (seed mod 4), for
// 12 s: successive CI runs, with their time-based seeds, rotate through the four. The
// seed is logged; the knobs, in the repository's FENCEDSQL_SCHEDULES_* style:
//
//	FENCEDSQL_SCHEDULES_SEED=n       replay: run i uses seed n+i, which picks its set-up
//	                                 and every random draw of the scheduler and the
//	                                 workers (faults, targets, holds, transfers); the
//	                                 timing of real processes is not replayed
//	FENCEDSQL_SCHEDULES_ITERS=n      runs (seeds) to run (default 1)
//	FENCEDSQL_SCHEDULES_DURATION=d   each run's schedule (default 12s)
//	FENCEDSQL_SCHEDULES_SETUP=s      "all": every set-up in each run; else the set-ups
//	                                 whose name (postgres-redis-lease, postgres-sql-token,
//	                                 mysql-sql-lease, mysql-redis-token) contains s
//	FENCEDSQL_SCHEDULES_LOG=1        with -v, log every fault
//
// The long form, FENCEDSQL_LONG=1: 4 seeds, every set-up, 40 s each (about 11 min):
//
//	FENCEDSQL_LONG=1 go test -timeout 0 -count=1 -v -run TestFaultScheduleMoneyConserved ./examples/drill/
//
// The test kills its worker processes and its redis-server when it ends, failed or not.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// faultWorkerEnv holds a worker's faultSpec (JSON): TestMain then runs the test binary
// as that worker (faultWorkerMain).
const faultWorkerEnv = "FENCEDSQL_FAULT_SCHEDULE_WORKER"

var faultWork = 60 * time.Millisecond

type faultSpec struct {
	Index     int    `json:"index"`
	DSN       string `json:"dsn"`
	RedisAddr string `json:"redis"`
	Driver    string `json:"driver"`   // postgres or mysql
	Locks     string `json:"locks"`    // redis or sql
	LockDSN   string `json:"lock_dsn"` // sqllock: the database through the lock proxy
	Prefix    string `json:"prefix"`
	Table     string `json:"table"`
	Accounts  int    `json:"accounts"`
	TTL       int64  `json:"ttl"`
	Work      int64  `json:"work"`
	Until     int64  `json:"until"` // unix ns
	Seed      uint64 `json:"seed"`
	Bind      string `json:"bind"` // lease (WithLeases) or token (WithToken)
	Owner     string `json:"owner"`
}

type faultEvent struct {
	Ev      string `json:"ev"` // ready, begin, attempt, error
	Att     int64  `json:"att"`
	From    int64  `json:"from,omitempty"`
	To      int64  `json:"to,omitempty"`
	Amount  int64  `json:"amount,omitempty"`
	Tok     uint64 `json:"tok,omitempty"`
	Read    int64  `json:"read,omitempty"`
	Wrote   int64  `json:"wrote,omitempty"`
	Out     string `json:"out,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Err     string `json:"err,omitempty"`
}

func faultWorkerMain(specJSON string) int {
	enc := json.NewEncoder(os.Stdout)
	var mu sync.Mutex
	emit := func(ev faultEvent) { mu.Lock(); _ = enc.Encode(ev); mu.Unlock() }
	var spec faultSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		emit(faultEvent{Ev: "fatal", Err: err.Error()})
		return 2
	}
	ctx := context.Background()
	be := backends[spec.Driver]
	db, err := sql.Open(be.fenced, spec.DSN)
	if err != nil {
		emit(faultEvent{Ev: "fatal", Err: err.Error()})
		return 2
	}
	defer db.Close()
	db.SetMaxOpenConns(2)
	var backend lockclient.Backend
	if spec.Locks == "sql" {
		ldb, err := sql.Open(be.raw, spec.LockDSN)
		if err != nil {
			emit(faultEvent{Ev: "fatal", Err: err.Error()})
			return 2
		}
		defer ldb.Close()
		ldb.SetMaxOpenConns(4)
		d := sqllock.Postgres
		if spec.Driver == "mysql" {
			d = sqllock.MySQL
		}
		b, err := sqllock.New(ldb, sqllock.WithDialect(d), sqllock.WithTable(spec.Table+"_locks"))
		if err != nil {
			emit(faultEvent{Ev: "fatal", Err: err.Error()})
			return 2
		}
		backend = b
	} else {
		rdb := redis.NewClient(&redis.Options{Addr: spec.RedisAddr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond,
			ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true, PoolSize: 4})
		defer rdb.Close()
		backend = redislock.New(rdb, redislock.WithPrefix(spec.Prefix))
	}
	client := lockclient.New(backend,
		lockclient.WithTTL(time.Duration(spec.TTL)), lockclient.WithOwner(spec.Owner))
	defer func() {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_ = client.Close(c)
	}()
	q := newProcStatements(spec.Table, be)
	emit(faultEvent{Ev: "ready"})
	rng := rand.New(rand.NewPCG(spec.Seed, uint64(spec.Index)))
	for att := int64(1); time.Now().UnixNano() < spec.Until; att++ {
		n := int64(spec.Accounts)
		from := 1 + rng.Int64N(n)
		to := 1 + rng.Int64N(n-1)
		if to >= from {
			to++
		}
		amount := 1 + rng.Int64N(100)
		work := time.Duration(float64(spec.Work) * (0.5 + rng.Float64()))
		faultRound(ctx, db, client, q, spec, emit, att, from, to, amount, work)
	}
	emit(faultEvent{Ev: "done"})
	return 0
}

func faultRound(ctx context.Context, db *sql.DB, client *lockclient.Client, q procStatements, spec faultSpec,
	emit func(faultEvent), att, from, to, amount int64, work time.Duration) {
	lo, hi := min(from, to), max(from, to)
	var leases []*lockclient.Lease
	for _, acct := range []int64{lo, hi} {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		lease, err := client.Acquire(actx, fmt.Sprintf("account:%d", acct))
		cancel()
		if err != nil {
			emit(faultEvent{Ev: "error", Att: att, Err: "acquire: " + err.Error()})
			return
		}
		emit(faultEvent{Ev: "grant", Att: att, Tok: lease.Token()})
		defer func() {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_ = lease.Release(rctx)
		}()
		leases = append(leases, lease)
	}
	tok := max(leases[0].Token(), leases[1].Token())
	bound := fencedsql.WithLeases(ctx, leases[0], leases[1])
	if spec.Bind == "token" {
		bound = fencedsql.WithToken(ctx, tok)
	}
	bctx, cancel := context.WithTimeout(bound, 20*time.Second)
	defer cancel()
	defer emit(faultEvent{Ev: "release", Att: att})
	w := &procWorker{spec: workerSpec{Index: spec.Index}, db: db, q: q}
	bal, err := w.readPair(bctx, lo, hi, att, tok)
	if err != nil {
		out := outError
		switch {
		case errors.Is(err, fencedsql.ErrFenced):
			out = outFenced
		case errors.Is(err, lockclient.ErrLeaseLost):
			out = outRefused
		}
		emit(faultEvent{Ev: "error", Att: att, Tok: tok, Out: out, Err: "read: " + err.Error(), Outcome: fencedsql.CommitOutcome(err).String()})
		return // a failed claim/read: no money moves; its "read" rows only if it committed
	}
	emit(faultEvent{Ev: "claimed", Att: att, Tok: tok})
	ev := faultEvent{Ev: "attempt", Att: att, From: from, To: to, Amount: amount, Tok: tok, Read: bal[from], Wrote: bal[from] - amount}
	if spec.Bind != "token" && errors.Join(leases[0].Err(), leases[1].Err()) != nil {
		ev.Out = outSkipped
		emit(ev)
		return
	}
	time.Sleep(work)
	after := map[int64]int64{from: bal[from] - amount, to: bal[to] + amount}
	emit(faultEvent{Ev: "begin", Att: att, Tok: tok})
	err = w.writePair(bctx, lo, hi, att, tok, bal, after)
	ev.Outcome = fencedsql.CommitOutcome(err).String()
	switch {
	case err == nil:
		ev.Out = outCommitted
	case errors.Is(err, fencedsql.ErrFenced):
		ev.Out = outFenced
	case errors.Is(err, lockclient.ErrLeaseLost):
		ev.Out = outRefused
	default:
		ev.Out = outError
	}
	if err != nil {
		ev.Err = err.Error()
	}
	emit(ev)
}

// --- coordinator ---

// faultRedis is the run's own redis-server (the schedule restarts it without
// persistence), on a port of its own.
type faultRedis struct {
	bin  string // testdb.RedisServerBin
	port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

func (r *faultRedis) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--protected-mode", "no", "--dir", r.dir)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	r.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(r.cmd, r.done)
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", r.addr()); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("redis-server did not start")
}

func (r *faultRedis) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// kill kills the server and waits for it to exit; nothing when none runs.
func (r *faultRedis) kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

type faultWorker struct {
	index   int
	cmd     *exec.Cmd
	owner   string
	db      *netproxy.Proxy
	rd      *netproxy.Proxy
	exited  chan struct{}
	killed  bool
	pending map[int64]bool // begun, not reported
	holding atomic.Bool
	mu      sync.Mutex
}

type faultResult struct {
	attempts  []attemptRecord
	unknownNC []faultEvent // reported NotCommitted with an untyped error: must not be in the ledger
	readNC    []faultEvent // claim transactions reported NotCommitted: their "read" rows must not be in the history
	errs      map[string]int
	outs      map[string]int
	faults    map[string]int
}

// faultVia returns dsn pointed at addr (through a proxy), with the guarded table and a
// session name for PostgreSQL (pg_terminate_backend by application_name).
func faultVia(t *testing.T, driver, dsn, addr, appName, table string) string {
	if driver == "mysql" {
		c, err := gomysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		c.Addr = addr
		c.Timeout = 2 * time.Second
		if table != "" {
			if c.Params == nil {
				c.Params = map[string]string{}
			}
			c.Params[fencedsql.ParamTables] = table
		}
		return c.FormatDSN()
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	qv := u.Query()
	qv.Set("application_name", appName)
	qv.Set("connect_timeout", "2")
	if table != "" {
		qv.Set(fencedsql.ParamTables, table)
	}
	u.RawQuery = qv.Encode()
	return u.String()
}

// faultRun runs one schedule of the set-up driver/locks/bind for dur, from seed, and
// checks its history. Its worker processes and redis-server are killed at cleanup.
func faultRun(t *testing.T, seed uint64, dur time.Duration, driver, locks, bind string) {
	var pgDSN, dbAddr string
	if driver == "mysql" {
		pgDSN = testdb.MySQL(t)
		c, err := gomysql.ParseDSN(pgDSN)
		if err != nil {
			t.Fatal(err)
		}
		dbAddr = c.Addr
	} else {
		pgDSN = testdb.Postgres(t)
		u, err := url.Parse(pgDSN)
		if err != nil {
			t.Fatal(err)
		}
		dbAddr = u.Host
	}
	ctx := context.Background()
	const accounts, initial, procs = 4, 1000, 4
	ttl := 400 * time.Millisecond
	table := "fault_acct"
	// The sessions' names, unique to the run (the shared server may run others):
	// pg_terminate_backend picks them by name.
	run := fmt.Sprintf("fs%d", time.Now().UnixNano()%1e9)
	tables, err := setUpProcTables(ctx, runInput{cfg: config{Table: table, Driver: driver}, backend: backends[driver], adminDSN: pgDSN},
		accounts, initial)
	if err != nil {
		t.Fatal(err)
	}
	defer tables.drop(ctx) //nolint:errcheck
	admin := tables.admin

	admin.SetMaxOpenConns(4)
	rs := &faultRedis{port: testdb.FreePort(t), dir: t.TempDir()}
	lockTarget := dbAddr
	if locks == "sql" {
		d := sqllock.Postgres
		if driver == "mysql" {
			d = sqllock.MySQL
		}
		if err := sqllock.CreateTable(ctx, admin, d, table+"_locks"); err != nil {
			t.Fatal(err)
		}
	} else {
		rs.bin = testdb.RedisServerBin(t)
		rs.start(t)
		t.Cleanup(rs.kill)
		lockTarget = rs.addr()
	}
	exe, _ := os.Executable()
	begins := make(chan *faultWorker, 64)
	claims := make(chan *faultWorker, 64)
	until := time.Now().Add(dur)
	res := &faultResult{errs: map[string]int{}, faults: map[string]int{}, outs: map[string]int{}}
	var resMu sync.Mutex
	var workers []*faultWorker
	var wmu sync.Mutex
	// However the run ends (a t.Fatal included), no worker outlives it: each is killed
	// (SIGKILL ends a stopped one too) and reaped, and its proxies closed.
	t.Cleanup(func() {
		wmu.Lock()
		ws := append([]*faultWorker(nil), workers...)
		wmu.Unlock()
		for _, w := range ws {
			_ = w.cmd.Process.Kill()
			<-w.exited
			w.db.Close()
			w.rd.Close()
		}
	})
	nextIndex := 0
	// spawn starts a worker; a replacement keeps the owner name of the worker it
	// replaces (an orchestrator's restarted pod or service has the same name).
	spawn := func(owner string) *faultWorker {
		dbp, err := netproxy.New(dbAddr)
		if err != nil {
			t.Fatal(err)
		}
		rdp, err := netproxy.New(lockTarget)
		if err != nil {
			t.Fatal(err)
		}
		wmu.Lock()
		idx := nextIndex
		nextIndex++
		wmu.Unlock()
		spec := faultSpec{Index: idx, DSN: faultVia(t, driver, pgDSN, dbp.Addr(), fmt.Sprintf("%s-w%d", run, idx), table), RedisAddr: rdp.Addr(),
			Driver: driver, Locks: locks, LockDSN: faultVia(t, driver, pgDSN, rdp.Addr(), fmt.Sprintf("%s-l%d", run, idx), ""), Prefix: fmt.Sprintf("%s:%s:", run, table), Table: table,
			Accounts: accounts, TTL: int64(ttl), Work: int64(faultWork), Until: until.UnixNano(), Seed: seed, Bind: bind, Owner: owner}
		if owner == "" {
			spec.Owner = fmt.Sprintf("%s-slot%d", run, idx)
		}
		sj, _ := json.Marshal(spec)
		w := &faultWorker{owner: spec.Owner, index: idx, db: dbp, rd: rdp, exited: make(chan struct{}), pending: map[int64]bool{}}
		w.cmd = exec.Command(exe)
		w.cmd.Env = append(os.Environ(), faultWorkerEnv+"="+string(sj))
		w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		var stderr strings.Builder
		w.cmd.Stderr = &stderr
		out, _ := w.cmd.StdoutPipe()
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			defer close(w.exited)
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64*1024), 1<<20)
			for sc.Scan() {
				var ev faultEvent
				if json.Unmarshal(sc.Bytes(), &ev) != nil {
					continue
				}
				switch ev.Ev {
				case "begin":
					w.mu.Lock()
					w.pending[ev.Att] = true
					w.mu.Unlock()
					select {
					case begins <- w:
					default:
					}
				case "attempt":
					w.mu.Lock()
					delete(w.pending, ev.Att)
					w.mu.Unlock()
					resMu.Lock()
					res.attempts = append(res.attempts, attemptRecord{Worker: w.index, Attempt: ev.Att, Account: ev.From, To: ev.To,
						Amount: ev.Amount, Token: ev.Tok, Read: ev.Read, Written: ev.Wrote, Outcome: ev.Out})
					res.outs[ev.Out]++
					if ev.Out == outError {
						res.errs[ev.Outcome+": "+faultShort(ev.Err)]++
						if ev.Outcome == fencedsql.NotCommitted.String() {
							e := ev
							e.Read = int64(w.index)
							res.unknownNC = append(res.unknownNC, e)
						}
					}
					resMu.Unlock()
				case "claimed":
					select {
					case claims <- w:
					default:
					}
				case "grant":
					w.holding.Store(true)
				case "release":
					w.holding.Store(false)
				case "error":
					resMu.Lock()
					k := faultShort(ev.Err)
					if strings.HasPrefix(k, "read") && ev.Outcome == fencedsql.NotCommitted.String() {
						e := ev
						e.Read = int64(w.index)
						res.readNC = append(res.readNC, e)
					}
					if ev.Out == outFenced || ev.Out == outRefused {
						k = "read " + ev.Out
					} else if strings.HasPrefix(k, "read") {
						k = "read (" + ev.Outcome + ")" + strings.TrimPrefix(k, "read")
					}
					res.errs[k]++
					resMu.Unlock()
				case "fatal":
					t.Errorf("worker %d fatal: %s", w.index, ev.Err)
				}
			}
			_ = w.cmd.Wait()
		}()
		wmu.Lock()
		workers = append(workers, w)
		wmu.Unlock()
		return w
	}
	for range procs {
		spawn("")
	}

	// The scheduler.
	rng := rand.New(rand.NewPCG(seed, 53))
	kinds := []string{"stop", "kill", "db-drop", "db-stall", "lock-drop", "lock-stall", "terminate", "redis-restart", "db-restart", "replace"}
	var fwg sync.WaitGroup
	busy := map[*faultWorker]bool{}
	var busyMu sync.Mutex
	for time.Now().Add(2 * ttl).Before(until) {
		var target *faultWorker
		afterClaim := false
		select {
		case <-time.After(time.Duration(rng.ExpFloat64() * float64(300*time.Millisecond))):
		case target = <-begins:
			if rng.Float64() < 0.6 {
				continue
			}
			// A write transaction has begun: fault its worker a few ms in.
			time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
		case target = <-claims:
			if rng.Float64() < 0.5 {
				continue
			}
			// The classic paused holder: it has read, it computes, it will write.
			afterClaim = true
		}
		kind := kinds[rng.IntN(len(kinds))]
		if kind == "redis-restart" && locks != "redis" || kind == "terminate" && driver == "mysql" {
			kind = "db-drop"
		}
		if target != nil {
			kind = kinds[rng.IntN(5)] // stop, kill, db-drop, db-stall, lock-drop
			if rng.Float64() < 0.4 {
				kind = "db-oneway"
			}
		}
		if afterClaim {
			kind = []string{"stop", "stop", "replace", "lock-drop", "lock-stall", "db-stall"}[rng.IntN(6)]
		}
		hold := time.Duration(float64(ttl) * (1.5 + 1.5*rng.Float64()))
		wmu.Lock()
		var live []*faultWorker
		for _, w := range workers {
			if !w.killed && !chanClosed(w.exited) {
				live = append(live, w)
			}
		}
		wmu.Unlock()
		if len(live) == 0 {
			continue
		}
		var holders []*faultWorker
		for _, w := range live {
			if w.holding.Load() {
				holders = append(holders, w)
			}
		}
		if len(holders) > 0 && rng.Float64() < 0.8 {
			live = holders
		}
		w := live[rng.IntN(len(live))]
		if target != nil {
			if target.killed || chanClosed(target.exited) {
				continue
			}
			w = target
		}
		busyMu.Lock()
		if busy[w] {
			busyMu.Unlock()
			continue
		}
		busy[w] = true
		busyMu.Unlock()
		res.faults[kind]++
		if showLog {
			t.Logf("fault %s on worker %d for %v (targeted %v)", kind, w.index, hold, target != nil)
		}
		end := func() {}
		switch kind {
		case "stop":
			_ = w.cmd.Process.Signal(syscall.SIGSTOP)
			end = func() { _ = w.cmd.Process.Signal(syscall.SIGCONT) }
		case "kill":
			w.mu.Lock()
			w.killed = true
			w.mu.Unlock()
			_ = w.cmd.Process.Kill()
			hold = 0
			spawn(w.owner)
		case "db-drop":
			w.db.Block()
			w.db.Reset()
			end = w.db.Unblock
		case "replace":
			// A hung worker is replaced by a new process with its name; the old one
			// wakes up later.
			_ = w.cmd.Process.Signal(syscall.SIGSTOP)
			spawn(w.owner)
			end = func() { _ = w.cmd.Process.Signal(syscall.SIGCONT) }
		case "db-oneway":
			w.db.OneWay(time.Duration(50+rng.IntN(200)) * time.Millisecond)
			hold = 300 * time.Millisecond
		case "db-stall":
			w.db.Block()
			end = w.db.Unblock
		case "lock-drop":
			w.rd.Block()
			w.rd.Reset()
			end = w.rd.Unblock
		case "lock-stall":
			w.rd.Block()
			end = w.rd.Unblock
		case "terminate":
			_, _ = admin.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name IN ($1, $2)",
				fmt.Sprintf("%s-w%d", run, w.index), fmt.Sprintf("%s-l%d", run, w.index))
			hold = 0
		case "db-restart":
			// Every session of the run's database ends at once and new connections wait
			// for 0.5 s: what the clients see of a server restart (the shared server
			// itself is not restarted).
			wmu.Lock()
			all := append([]*faultWorker(nil), workers...)
			wmu.Unlock()
			var behind []string // the server sessions' client addresses (netproxy.Proxy.Upstream)
			for _, x := range all {
				x.db.Block()
				behind = append(behind, x.db.Upstream()...)
				x.db.Reset()
				if locks == "sql" {
					x.rd.Block()
					behind = append(behind, x.rd.Upstream()...)
					x.rd.Reset()
				}
			}
			if driver == "mysql" {
				killSessionsBehind(ctx, admin, behind)
			} else {
				_, _ = admin.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE $1", run+"-%")
			}
			time.Sleep(500 * time.Millisecond)
			for _, x := range all {
				x.db.Unblock()
				x.rd.Unblock()
			}
			hold = 0
		case "redis-restart":
			rs.kill()
			time.Sleep(100 * time.Millisecond)
			rs.start(t)
			hold = 0
		}
		fwg.Go(func() {
			time.Sleep(hold)
			end()
			busyMu.Lock()
			delete(busy, w)
			busyMu.Unlock()
		})
	}
	fwg.Wait()
	wmu.Lock()
	ws := append([]*faultWorker(nil), workers...)
	wmu.Unlock()
	for _, w := range ws {
		select {
		case <-w.exited:
		case <-time.After(60 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.exited
			t.Errorf("worker %d did not finish", w.index)
		}
		w.db.Close()
		w.rd.Close()
	}

	history, final, err := tables.readHistory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := checkTransfers(history, final, res.attempts, initial)
	ledger := map[[2]int64]bool{}
	for _, h := range history {
		if h.Kind == "write" {
			ledger[[2]int64{int64(h.Worker), h.Attempt}] = true
		}
	}
	for _, e := range res.unknownNC {
		if ledger[[2]int64{e.Read, e.Att}] {
			t.Errorf("worker-%d transfer %d: Commit failed with %q, CommitOutcome says NotCommitted, but it is in the ledger", e.Read, e.Att, e.Err)
		}
	}
	claimRows := map[[2]int64]bool{}
	for _, h := range history {
		if h.Kind == "read" {
			claimRows[[2]int64{int64(h.Worker), h.Attempt}] = true
		}
	}
	for _, e := range res.readNC {
		if claimRows[[2]int64{e.Read, e.Att}] {
			t.Errorf("worker-%d claim %d: failed with %q, CommitOutcome says NotCommitted, but its reads are in the history", e.Read, e.Att, e.Err)
		}
	}
	committed := 0
	for _, a := range res.attempts {
		if a.Outcome == outCommitted {
			committed++
		}
	}
	t.Logf("seed %d (%s, %s, bind %s): %d workers, %d attempts, %d committed, faults %v; outs %v; errors %v; %s", seed, driver, locks, bind, len(ws), len(res.attempts), committed, res.faults, res.outs, res.errs, c.summary())
	if !c.OK {
		t.Errorf("seed %d: %s", seed, c.summary())
	}
	// The checker must have seen work: about one transfer a second commits under the
	// schedule on a loaded machine; fewer than one in two seconds is a starved run.
	if least := max(5, int(dur/(2*time.Second))); committed < least {
		t.Errorf("seed %d: only %d transfers committed (fewer than %d in %v): the schedule starved the workers", seed, committed, least, dur)
	}
}

func faultShort(s string) string {
	if len(s) > 160 {
		return s[:160]
	}
	return s
}

// faultSetups are the schedule's set-ups: database, lock service, binding.
var faultSetups = [][3]string{{"postgres", "redis", "lease"}, {"postgres", "sql", "token"}, {"mysql", "sql", "lease"}, {"mysql", "redis", "token"}}

// faultSetupsOf returns the set-ups a run of seed covers: the one seed picks (seed mod
// 4) when filter is "", every one for "all", else those whose name contains filter.
func faultSetupsOf(seed uint64, filter string) [][3]string {
	switch filter {
	case "":
		return faultSetups[seed%uint64(len(faultSetups)) : seed%uint64(len(faultSetups))+1]
	case "all":
		return faultSetups
	}
	var out [][3]string
	for _, c := range faultSetups {
		if strings.Contains(strings.Join(c[:], "-"), filter) {
			out = append(out, c)
		}
	}
	return out
}

// TestFaultScheduleMoneyConserved runs the fault schedule (the file's leading comment;
// knobs FENCEDSQL_SCHEDULES_*, FENCEDSQL_LONG).
func TestFaultScheduleMoneyConserved(t *testing.T) {
	if !procsSupported {
		t.Skip("Linux only: the schedule stops and kills worker processes with signals")
	}
	runs, dur, filter := 1, 12*time.Second, ""
	if testdb.Long() {
		runs, dur, filter = 4, 40*time.Second, "all"
	}
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), runs)
	if s := os.Getenv("FENCEDSQL_SCHEDULES_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 2*time.Second {
			t.Fatalf("FENCEDSQL_SCHEDULES_DURATION=%q: want a duration of 2s or more", s)
		}
		dur = d
	}
	if s := os.Getenv("FENCEDSQL_SCHEDULES_SETUP"); s != "" {
		filter = s
	}
	showLog = k.ShowLog && testing.Verbose()
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d), %d run(s) of %v", k.Seed, k.Seed, k.Iters, dur)
	n := 0
	for i := range k.Iters {
		seed := uint64(k.Seed) + uint64(i)
		for _, c := range faultSetupsOf(seed, filter) {
			n++
			t.Run(fmt.Sprintf("%s-%s-%s-seed%d", c[0], c[1], c[2], seed), func(t *testing.T) {
				faultRun(t, seed, dur, c[0], c[1], c[2])
				if t.Failed() {
					t.Logf("replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_SETUP=%s-%s-%s", seed, c[0], c[1], c[2])
				}
			})
		}
	}
	if n == 0 {
		t.Fatalf("FENCEDSQL_SCHEDULES_SETUP=%q names no set-up", filter)
	}
}

// showLog: log every fault (FENCEDSQL_SCHEDULES_LOG=1 with -v).
var showLog bool

// killSessionsBehind ends, on MariaDB, the sessions of the run's database whose client
// address is one of addrs: the workers' sessions behind their proxies, whatever they
// are running. Not every session whose process list DB is the run's: a session of
// another test reading information_schema shows, while it opens an object of this
// database, this database as its own, and was killed too.
func killSessionsBehind(ctx context.Context, admin *sql.DB, addrs []string) {
	ports := map[string]bool{}
	for _, a := range addrs {
		if _, port, err := net.SplitHostPort(a); err == nil {
			ports[port] = true
		}
	}
	rows, err := admin.QueryContext(ctx, "SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()")
	if err != nil {
		return
	}
	var ids []int64
	for rows.Next() {
		var id int64
		var host string
		if rows.Scan(&id, &host) != nil {
			continue
		}
		// HOST is address:port over TCP (127.0.0.1 or, with name resolution, localhost).
		if _, port, err := net.SplitHostPort(host); err == nil && ports[port] {
			ids = append(ids, id)
		}
	}
	rows.Close()
	for _, id := range ids {
		_, _ = admin.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
	}
}
