package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// Process mode (-procs N): every worker is a separate OS process — the drill's own
// executable started again with workerEnv set — with its own lock client and database
// pool, reaching the lock service through a loopback proxy of its own that lives in
// this process, the coordinator. The coordinator
//
//   - hosts the lock service: with -locks mem a memlock.Service served over HTTP on
//     loopback (lockserver.go), with -locks etcd-embedded the etcd cluster; -locks etcd
//     is an external cluster;
//   - creates the tables (the accounts and the history), starts the workers and reads
//     their reports (one JSON event per line on their stdout);
//   - injects the faults, on a schedule drawn from -seed: it freezes a worker with
//     SIGSTOP and thaws it with SIGCONT (a real stop-the-world pause: the worker's lease
//     watchdog stops too), or partitions it by blocking its proxies and, when healing,
//     resetting their connections. The victim is preferably a worker that holds a lease;
//   - with -failover, kills the etcd leader half-way through;
//   - after the run, checks the history (checkHistory) and reports the verdict.
//
// Workers check their lease (lease.Err) before they write, then compute for -work, then
// write: a freeze that falls after the check makes the natural late writer.

// procRun is the coordinator's view of one process-mode run.
type procRun struct {
	r       *runner
	workers []*procHandle
	start   time.Time

	mu       sync.Mutex
	attempts []attemptRecord

	faultMu sync.Mutex // serialises fault changes with the final thaw
	ended   bool
}

// procHandle is one worker process.
type procHandle struct {
	index   int
	cmd     *exec.Cmd
	proxies proxies
	stderr  *tailBuffer
	stdin   io.WriteCloser // "go" starts the rounds
	ready   chan struct{}  // closed at the "ready" event or the exit
	exited  chan struct{}

	holding  atomic.Bool  // between a grant and its release, as last reported
	faulted  atomic.Bool  // frozen or partitioned now
	faults   atomic.Int64 // faults injected so far
	atGrant  atomic.Int64 // faults when the current lease was granted
	fatalErr atomic.Pointer[string]
}

// runOnceProcs is one process-mode run (unfenced or fenced).
func runOnceProcs(ctx context.Context, in runInput) (rr runReport, err error) {
	cfg := in.cfg
	var initial int64
	if cfg.Workload == workloadTransfer {
		initial = transferInitial
	}
	tables, err := setUpProcTables(ctx, in, cfg.Accounts, initial)
	if err != nil {
		return rr, err
	}
	defer func() {
		if derr := tables.drop(ctx); derr != nil && err == nil {
			err = derr
		}
	}()
	locks, err := openRunLocks(ctx, in)
	if err != nil {
		return rr, err
	}
	defer func() {
		if cerr := locks.close(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	targets, prefix, err := procTargets(locks, cfg, in.name)
	if err != nil {
		return rr, err
	}
	exe, err := os.Executable()
	if err != nil {
		return rr, fmt.Errorf("process mode re-executes the drill: %w", err)
	}

	r := &runner{cfg: cfg, name: in.name, locks: locks, log: in.log, timeline: in.timeline}
	pr := &procRun{r: r}
	defer pr.stopAll()
	for i := range cfg.Procs {
		ps, err := newProxies(targets)
		if err != nil {
			return rr, err
		}
		spec := workerSpec{
			Index: i, Run: in.name, Driver: cfg.Driver, DriverName: in.driverName, DSN: in.dsn, Table: cfg.Table,
			Accounts: cfg.Accounts, Locks: cfg.Locks, LockAddrs: ps.addrs(), LockPrefix: prefix,
			TTL: int64(cfg.TTL), Work: int64(cfg.Work), Rounds: cfg.Rounds, Duration: int64(cfg.Duration), Seed: cfg.Seed, Bind: cfg.Bind,
			Workload: cfg.Workload,
		}
		h := &procHandle{index: i, proxies: ps, stderr: &tailBuffer{max: 4096}, ready: make(chan struct{}), exited: make(chan struct{})}
		pr.workers = append(pr.workers, h)
		specJSON, _ := json.Marshal(spec)
		h.cmd = exec.Command(exe)
		h.cmd.Env = append(os.Environ(), workerEnv+"="+string(specJSON))
		h.cmd.Stderr = h.stderr
		h.cmd.SysProcAttr = workerSysProcAttr()
		stdout, err := h.cmd.StdoutPipe()
		if err != nil {
			return rr, err
		}
		if h.stdin, err = h.cmd.StdinPipe(); err != nil {
			return rr, err
		}
		if err := h.cmd.Start(); err != nil {
			return rr, fmt.Errorf("starting worker process %d: %w", i, err)
		}
		go pr.read(h, stdout)
	}
	// Wait until every worker is ready (connected to its database), so that the run's
	// clock starts with all of them.
	for _, h := range pr.workers {
		if err := pr.waitReady(ctx, h); err != nil {
			return rr, err
		}
	}
	in.log.eventf("[%s] %d worker processes started", in.name, cfg.Procs)
	pr.start = time.Now()
	r.timeline.begin(pr.start)
	for _, h := range pr.workers {
		_, _ = io.WriteString(h.stdin, "go\n")
	}
	stopProgress := r.progress(pr.start)
	waitFailover := func() []failoverReport { return nil }
	if fs, ok := locks.(failoverService); ok && cfg.Failover {
		waitFailover = r.scheduleFailover(ctx, fs, pr.start)
	}
	faultsDone := make(chan struct{})
	var faultWG sync.WaitGroup
	faultWG.Go(func() { pr.injectFaults(ctx, faultsDone) })

	pr.waitWorkers(ctx)
	close(faultsDone)
	faultWG.Wait()
	pr.thawAll()
	failovers := waitFailover()
	stopProgress()
	elapsed := time.Since(pr.start)
	r.timeline.finish(pr.start.Add(elapsed))
	if err := ctx.Err(); err != nil {
		return rr, fmt.Errorf("interrupted: %w", err)
	}
	for _, h := range pr.workers {
		if msg := h.fatalErr.Load(); msg != nil {
			return rr, fmt.Errorf("worker process %d: %s", h.index, *msg)
		}
		if st := h.cmd.ProcessState; st != nil && !st.Success() {
			return rr, fmt.Errorf("worker process %d: %v; its stderr ends with:\n%s", h.index, st, h.stderr.String())
		}
	}

	history, final, err := tables.readHistory(ctx)
	if err != nil {
		return rr, err
	}
	pr.mu.Lock()
	attempts := pr.attempts
	pr.mu.Unlock()
	var planted *attemptRecord
	if cfg.Mutate == mutateLostUpdate && in.name == "fenced" {
		at, err := tables.plantLostUpdate(ctx, in.backend, history)
		if err != nil {
			return rr, err
		}
		planted = &at
		attempts = append(attempts, at)
		r.counts.committed.Add(1)
		in.log.eventf("[%s] -mutate lost-update: replayed worker-%d's write with token %d (%d -> %d) on account %d after the run",
			in.name, at.Worker, at.Token, at.Read, at.Written, at.Account)
		if history, final, err = tables.readHistory(ctx); err != nil {
			return rr, err
		}
	}
	check := checkHistory(history, final, attempts)
	if cfg.Workload == workloadTransfer {
		check = checkTransfers(history, final, attempts, initial)
	}
	var sum int64
	for _, b := range final {
		sum += b
	}
	rr = r.tally(in.driverName, sum, elapsed, failovers)
	rr.Processes = cfg.Procs
	rr.Accounts = cfg.Accounts
	rr.LeaseCheckSkips = r.counts.skipped.Load()
	rr.AcquireErrors = r.counts.acquireErrors.Load()
	rr.FreezesOfHolders = r.counts.holderFaults.Load()
	rr.Check = &check
	rr.Planted = planted
	rr.InvariantHolds = check.OK
	if cfg.Workload == workloadTransfer {
		// Committed counts transfers, the final balance is the sum of the balances: the
		// increments' invariant (final == committed) does not apply; the checker's does.
		rr.Workload, rr.InitialBalance = workloadTransfer, initial*int64(cfg.Accounts)
		rr.LostUpdates = check.LostUpdates
	}
	if elapsed > 0 {
		rr.CriticalSectionsPerSec = float64(rr.Rounds) / elapsed.Seconds()
	}
	in.log.eventf("[%s] %s", in.name, check.summary())
	return rr, nil
}

// mutateLostUpdate is -mutate's value that plants a lost update after the fenced run.
const mutateLostUpdate = "lost-update"

// procTargets returns the addresses the workers' proxies forward to, and the key prefix.
func procTargets(ls lockService, cfg config, name string) ([]string, string, error) {
	switch l := ls.(type) {
	case *lockServer:
		return []string{l.Addr()}, "", nil
	case *etcdLocks:
		return l.targets, l.prefix, nil
	}
	return nil, "", fmt.Errorf("-locks %s is not supported with -procs (use mem, etcd-embedded or etcd)", cfg.Locks)
}

var errNoProcs = errors.New("process mode is only supported on Linux")
