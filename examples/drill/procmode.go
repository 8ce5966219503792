package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
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

// read consumes worker h's events until its stdout closes, then waits for it to exit.
func (pr *procRun) read(h *procHandle, stdout io.Reader) {
	var readyOnce sync.Once
	markReady := func() { readyOnce.Do(func() { close(h.ready) }) }
	defer close(h.exited)
	defer markReady()
	r := pr.r
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var ev procEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue // not ours (a library writing on stdout)
		}
		at := time.Unix(0, ev.T)
		switch ev.Ev {
		case "ready":
			markReady()
		case "grant":
			if !ev.Second {
				r.counts.rounds.Add(1)
			}
			for {
				last := r.counts.lastToken.Load()
				if ev.Tok <= last || r.counts.lastToken.CompareAndSwap(last, ev.Tok) {
					break
				}
			}
			h.holding.Store(true)
			h.atGrant.Store(h.faults.Load())
			r.timeline.add(at, h.index, evGrant, ev.Tok, false)
		case "release", "lost":
			h.holding.Store(false)
			switch {
			case ev.Ev == "lost":
				r.counts.leasesLost.Add(1)
				end := at
				if ev.Lost != 0 {
					end = time.Unix(0, ev.Lost)
				}
				r.timeline.add(end, h.index, evLost, ev.Tok, false)
			case strings.HasPrefix(ev.Err, "unconfirmed"):
				r.counts.releasesUnconfirmed.Add(1)
				r.timeline.add(at, h.index, evRelease, ev.Tok, false)
			case ev.Err != "":
				r.fail(fmt.Errorf("worker-%d: release token %d: %s", h.index, ev.Tok, ev.Err))
				r.timeline.add(at, h.index, evRelease, ev.Tok, false)
			default:
				r.timeline.add(at, h.index, evRelease, ev.Tok, false)
			}
		case "attempt":
			pr.attempt(h, ev, at)
		case "error":
			if strings.HasPrefix(ev.Err, "acquire") {
				r.counts.acquireErrors.Add(1)
			} else {
				r.fail(fmt.Errorf("worker-%d: %s", h.index, ev.Err))
			}
		case "read":
			if ev.Out == outFenced {
				// A claim refused: the lease was already stale when it read.
				r.counts.fenced.Add(1)
				r.timeline.add(at, h.index, evRejected, ev.Tok, true)
				r.log.eventf("[%s] worker-%d claim of account %d with token %d refused by the database (ErrFenced): a newer holder had claimed it",
					r.name, h.index, ev.Acct, ev.Tok)
			}
		case "fatal":
			msg := ev.Err
			h.fatalErr.Store(&msg)
		}
	}
	_ = h.cmd.Wait()
}

// attempt records a write attempt as worker h saw it.
func (pr *procRun) attempt(h *procHandle, ev procEvent, at time.Time) {
	r := pr.r
	late := h.faults.Load() > h.atGrant.Load()
	rec := attemptRecord{Worker: h.index, Attempt: ev.Att, Account: ev.Acct, Token: ev.Tok, Read: ev.Read, Written: ev.Wrote, Outcome: ev.Out,
		To: ev.To, Amount: ev.Amount}
	pr.mu.Lock()
	pr.attempts = append(pr.attempts, rec)
	pr.mu.Unlock()
	if late && ev.Out != outSkipped {
		r.counts.late.Add(1)
	}
	switch ev.Out {
	case outCommitted:
		r.counts.committed.Add(1)
		r.timeline.add(at, h.index, evCommit, ev.Tok, late)
		if late {
			r.counts.lateCommitted.Add(1)
			r.log.eventf("[%s] worker-%d late write %d->%d on account %d with token %d (newest token issued: %d): committed",
				r.name, h.index, ev.Read, ev.Wrote, ev.Acct, ev.Tok, r.lastToken())
		}
	case outFenced:
		r.counts.fenced.Add(1)
		r.timeline.add(at, h.index, evRejected, ev.Tok, late)
		r.log.eventf("[%s] worker-%d late write %d->%d on account %d with token %d (newest token issued: %d): refused by the database (ErrFenced)",
			r.name, h.index, ev.Read, ev.Wrote, ev.Acct, ev.Tok, r.lastToken())
	case outRefused:
		r.counts.leaseRefusals.Add(1)
		r.timeline.add(at, h.index, evRefused, ev.Tok, late)
	case outSkipped:
		r.counts.skipped.Add(1)
		r.timeline.add(at, h.index, evSkipped, ev.Tok, late)
	default:
		r.fail(fmt.Errorf("worker-%d: write with token %d: %s", h.index, ev.Tok, ev.Err))
	}
}

// waitReady waits for worker h's "ready" event (or its exit).
func (pr *procRun) waitReady(ctx context.Context, h *procHandle) error {
	select {
	case <-h.ready:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(60 * time.Second):
		return fmt.Errorf("worker process %d not ready after 60s", h.index)
	}
	if msg := h.fatalErr.Load(); msg != nil {
		return fmt.Errorf("worker process %d: %s", h.index, *msg)
	}
	if chanClosed(h.exited) {
		return fmt.Errorf("worker process %d exited before it was ready: %v; stderr:\n%s", h.index, h.cmd.ProcessState, h.stderr.String())
	}
	return nil
}

// waitWorkers waits for every worker to exit (their rounds or -duration are up); when
// ctx ends it asks them to stop (SIGTERM).
func (pr *procRun) waitWorkers(ctx context.Context) {
	for _, h := range pr.workers {
		for done := false; !done; {
			select {
			case <-h.exited:
				done = true
			case <-ctx.Done():
				pr.thawAll()
				pr.signalAll(sigTerm)
				<-h.exited
				done = true
			}
		}
	}
}

func (pr *procRun) signalAll(sig os.Signal) {
	for _, h := range pr.workers {
		if h.cmd.Process != nil {
			_ = h.cmd.Process.Signal(sig)
		}
	}
}

// stopAll kills workers still running (an early return) and closes the proxies.
func (pr *procRun) stopAll() {
	pr.thawAll()
	for _, h := range pr.workers {
		if h.cmd.Process != nil && h.cmd.ProcessState == nil {
			select {
			case <-h.exited:
			default:
				_ = h.cmd.Process.Kill()
				<-h.exited
			}
		}
		h.proxies.close()
	}
}

// thawAll ends every fault: SIGCONT to every worker, proxies healed. No fault starts
// after it.
func (pr *procRun) thawAll() {
	pr.faultMu.Lock()
	defer pr.faultMu.Unlock()
	pr.ended = true
	for _, h := range pr.workers {
		if h.faulted.Load() {
			if h.cmd.Process != nil {
				_ = h.cmd.Process.Signal(sigCont)
			}
			h.proxies.heal()
			h.faulted.Store(false)
		}
	}
}

// injectFaults freezes or partitions workers until done closes: at exponentially
// distributed intervals (mean -fault-every), one worker that is not already faulted —
// one holding a lease if there is any — for 1.5 to 3 TTLs (plus the lag of etcd).
func (pr *procRun) injectFaults(ctx context.Context, done <-chan struct{}) {
	cfg := pr.r.cfg
	if cfg.PauseProb+cfg.PartitionProb <= 0 || cfg.FaultEvery <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 1<<32))
	maxFaulted := max(1, cfg.Procs/2)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		wait := time.Duration(rng.ExpFloat64() * float64(cfg.FaultEvery))
		roll, pick, hold := rng.Float64(), rng.Uint64(), time.Duration(float64(cfg.TTL)*(1.5+1.5*rng.Float64()))+cfg.serviceLag()
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		var holders, idle []*procHandle
		faulted := 0
		for _, h := range pr.workers {
			switch {
			case h.faulted.Load():
				faulted++
			case chanClosed(h.exited):
			case h.holding.Load():
				holders = append(holders, h)
			default:
				idle = append(idle, h)
			}
		}
		if faulted >= maxFaulted {
			continue
		}
		cands := holders
		if len(cands) == 0 {
			cands = idle
		}
		if len(cands) == 0 {
			continue
		}
		h := cands[pick%uint64(len(cands))]
		freeze := roll < cfg.PauseProb/(cfg.PauseProb+cfg.PartitionProb)
		if !pr.startFault(h, freeze, len(holders) > 0) {
			return
		}
		wg.Go(func() {
			select {
			case <-time.After(hold):
			case <-done:
			case <-ctx.Done():
			}
			pr.endFault(h, freeze)
		})
	}
}

func chanClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (pr *procRun) startFault(h *procHandle, freeze, holder bool) bool {
	pr.faultMu.Lock()
	defer pr.faultMu.Unlock()
	if pr.ended {
		return false
	}
	r := pr.r
	h.faulted.Store(true)
	h.faults.Add(1)
	if holder {
		r.counts.holderFaults.Add(1)
	}
	now := time.Now()
	if freeze {
		r.counts.pauses.Add(1)
		_ = h.cmd.Process.Signal(sigStop)
		r.timeline.add(now, h.index, evPauseStart, 0, false)
		r.log.eventf("[%s] worker-%d frozen (SIGSTOP)", r.name, h.index)
	} else {
		r.counts.partitions.Add(1)
		h.proxies.partition()
		r.timeline.add(now, h.index, evPartitionStart, 0, false)
		r.log.eventf("[%s] worker-%d cut off from the lock service", r.name, h.index)
	}
	return true
}

func (pr *procRun) endFault(h *procHandle, freeze bool) {
	pr.faultMu.Lock()
	defer pr.faultMu.Unlock()
	if !h.faulted.Load() {
		return // thawAll was first
	}
	if freeze {
		_ = h.cmd.Process.Signal(sigCont)
	} else {
		h.proxies.heal()
	}
	h.faulted.Store(false)
	pr.r.timeline.add(time.Now(), h.index, evFaultEnd, 0, false)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var errNoProcs = errors.New("process mode is only supported on Linux")
