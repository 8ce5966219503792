package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// run runs the workload unfenced, then fenced, with the same fault schedule, and
// judges the outcome. Progress and events go to cfg.Log.
func run(ctx context.Context, cfg config) (report, error) {
	if err := cfg.validate(); err != nil {
		return report{}, err
	}
	be := backends[cfg.Driver]
	dsn := cfg.DSN
	if dsn == "" {
		dir, err := os.MkdirTemp("", "fencedsql-drill-")
		if err != nil {
			return report{}, err
		}
		defer os.RemoveAll(dir)
		dsn = sqliteDSN(filepath.Join(dir, "drill.db"))
	}
	lg := newLogger(cfg)
	rep := report{Config: cfg, Settings: newSettings(cfg)}
	var tlUnfenced, tlFenced *timeline
	if cfg.Timeline != "" {
		tlUnfenced, tlFenced = newTimeline("unfenced", cfg.Workers), newTimeline("fenced", cfg.Workers)
	}
	var meters metric.MeterProvider
	if cfg.metrics != nil {
		meters = cfg.metrics.provider
		rep.Metrics = cfg.metrics.URL()
	}
	var err error
	runOne := runOnce
	if cfg.Procs > 0 {
		runOne = runOnceProcs
	}
	rep.Unfenced, err = runOne(ctx, runInput{cfg: cfg, log: lg, backend: be, name: "unfenced",
		driverName: be.raw, dsn: dsn, adminDSN: dsn, timeline: tlUnfenced})
	if err != nil {
		return rep, fmt.Errorf("unfenced run: %w", err)
	}
	if cfg.hooks.afterRun != nil {
		cfg.hooks.afterRun("unfenced")
	}
	rep.Fenced, err = runOne(ctx, runInput{cfg: cfg, log: lg, backend: be, name: "fenced",
		driverName: be.fenced, dsn: addParam(cfg.Driver, dsn, fencedsql.ParamTables+"="+cfg.Table), adminDSN: dsn,
		meters: meters, timeline: tlFenced})
	if err != nil {
		return rep, fmt.Errorf("fenced run: %w", err)
	}
	if cfg.metrics != nil {
		n, err := cfg.metrics.FencedRejections(cfg.Table)
		if err != nil {
			return rep, fmt.Errorf("reading the metrics: %w", err)
		}
		rep.Fenced.MetricsFencedRejections = &n
	}
	if cfg.hooks.afterRun != nil {
		cfg.hooks.afterRun("fenced")
	}
	rep.judge()
	if cfg.Timeline != "" {
		if err := writeTimelineSVG(cfg.Timeline, []*timeline{tlUnfenced, tlFenced}, []*runReport{&rep.Unfenced, &rep.Fenced}); err != nil {
			return rep, fmt.Errorf("-timeline: %w", err)
		}
		rep.Timeline = cfg.Timeline
	}
	return rep, nil
}

// runInput is what one run (unfenced or fenced) is made of.
type runInput struct {
	cfg        config
	log        *logger
	backend    backend // the database's drivers and dialect
	name       string  // "unfenced" or "fenced"
	driverName string  // database/sql driver of the workload: backend.raw or backend.fenced
	dsn        string  // the workload's DSN
	adminDSN   string  // DSN of the plain driver: the table's set-up and clean-up, the final balance

	// Where the lock clients (and the fenced run's driver) record their metrics; nil:
	// the lock clients use the global provider and the fenced driver is opened by name.
	meters   metric.MeterProvider
	timeline *timeline // records the run's events; nil: no timeline
}

// runOnce is one run: it creates the table (through the plain driver at in.adminDSN),
// opens the workload's database (in.driverName at in.dsn) and the lock service, runs
// the workers, reads the final balance and drops the table.
func runOnce(ctx context.Context, in runInput) (rr runReport, err error) {
	table, err := setUpTable(ctx, in)
	if err != nil {
		return rr, err
	}
	defer func() {
		if derr := table.drop(ctx); derr != nil && err == nil {
			err = derr
		}
	}()
	db, err := openWorkloadDB(in)
	if err != nil {
		return rr, err
	}
	defer db.Close()
	locks, err := openRunLocks(ctx, in)
	if err != nil {
		return rr, err
	}
	defer func() {
		if cerr := locks.close(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}()

	r := &runner{cfg: in.cfg, name: in.name, db: db, locks: locks, q: table.q, key: lockKey,
		log: in.log, meters: in.meters, timeline: in.timeline}
	elapsed, failover := r.runWorkers(ctx)
	if err := ctx.Err(); err != nil {
		return rr, fmt.Errorf("interrupted: %w", err)
	}
	final, err := table.balance(ctx)
	if err != nil {
		return rr, err
	}
	return r.tally(in.driverName, final, elapsed, failover), nil
}

// openRunLocks opens the lock service of run in.name; it logs how long an embedded
// etcd took to start.
func openRunLocks(ctx context.Context, in runInput) (lockService, error) {
	started := time.Now()
	locks, err := openLocks(ctx, in.cfg, in.name)
	if err != nil {
		return nil, fmt.Errorf("lock service %s: %w", in.cfg.Locks, err)
	}
	if in.cfg.Locks == locksEtcdEmbedded {
		in.log.eventf("[%s] etcd: %d member(s) started in %v", in.name, in.cfg.EtcdMembers, time.Since(started).Round(time.Millisecond))
	}
	return locks, nil
}

// counters are one run's tallies, updated by the workers.
type counters struct {
	rounds, committed, fenced, leaseRefusals, leasesLost atomic.Int64
	late, lateCommitted, pauses, partitions, other       atomic.Int64
	releasesUnconfirmed                                  atomic.Int64
	skipped, acquireErrors, holderFaults                 atomic.Int64  // process mode
	lastToken                                            atomic.Uint64 // greatest token granted
}

// lockKey is the name of the lock every worker takes.
const lockKey = "account:1"

// runner is one run's workers and what they share.
type runner struct {
	cfg      config
	name     string
	db       *sql.DB
	locks    lockService
	q        statements
	key      string
	deadline time.Time // no round starts after it; zero: no limit
	log      *logger
	counts   counters
	meters   metric.MeterProvider // nil: the lock clients use the global one
	timeline *timeline            // nil: no timeline

	errMu    sync.Mutex
	firstErr error
}

// runWorkers runs every worker until its rounds (or the run's time) are up, with the
// progress line and, with -failover, the leader's kills. It returns how long that took
// and what the failovers did.
func (r *runner) runWorkers(ctx context.Context) (elapsed time.Duration, failovers []failoverReport) {
	start := time.Now()
	r.timeline.begin(start)
	if r.cfg.Duration > 0 {
		r.deadline = start.Add(r.cfg.Duration)
	}
	stopProgress := r.progress(start)
	waitFailover := func() []failoverReport { return nil }
	if fs, ok := r.locks.(failoverService); ok && r.cfg.Failover {
		waitFailover = r.scheduleFailover(ctx, fs, start)
	}
	var wg sync.WaitGroup
	for w := range r.cfg.Workers {
		wg.Go(func() { r.worker(ctx, w) })
	}
	wg.Wait()
	failovers = waitFailover()
	stopProgress()
	elapsed = time.Since(start)
	r.timeline.finish(start.Add(elapsed))
	return elapsed, failovers
}

// tally is the run's report once the workers are done: their counts, and the final
// balance read from the table.
func (r *runner) tally(driverName string, final int64, elapsed time.Duration, failovers []failoverReport) runReport {
	rr := runReport{
		Name:                r.name,
		Bind:                r.cfg.Bind,
		Driver:              driverName,
		Rounds:              r.counts.rounds.Load(),
		Committed:           r.counts.committed.Load(),
		FinalBalance:        final,
		FencedRejections:    r.counts.fenced.Load(),
		LeaseRefusals:       r.counts.leaseRefusals.Load(),
		LeasesLost:          r.counts.leasesLost.Load(),
		LateWrites:          r.counts.late.Load(),
		LateWritesCommitted: r.counts.lateCommitted.Load(),
		Pauses:              r.counts.pauses.Load(),
		Partitions:          r.counts.partitions.Load(),
		ReleasesUnconfirmed: r.counts.releasesUnconfirmed.Load(),
		OtherErrors:         r.counts.other.Load(),
		LastToken:           r.lastToken(),
		DurationMS:          elapsed.Milliseconds(),
		Failovers:           failovers,
	}
	rr.LostUpdates = rr.Committed - rr.FinalBalance
	rr.InvariantHolds = rr.LostUpdates == 0
	if want := max(r.cfg.Failovers, 1); r.cfg.Failover && len(failovers) < want {
		r.fail(fmt.Errorf("the run ended after %d of its %d scheduled failovers", len(failovers), want))
		rr.OtherErrors = r.counts.other.Load()
	}
	if r.firstErr != nil {
		rr.FirstError = r.firstErr.Error()
	}
	r.log.eventf("[%s] done in %v: %d committed, final balance %d, %d lost, %d fenced", r.name,
		elapsed.Round(time.Millisecond), rr.Committed, rr.FinalBalance, rr.LostUpdates, rr.FencedRejections)
	return rr
}
