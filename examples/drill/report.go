package main

import (
	"fmt"
	"io"
	"time"
)

// report is the outcome of both runs.
type report struct {
	Config   config    `json:"-"`
	Settings settings  `json:"config"`
	Unfenced runReport `json:"unfenced"`
	Fenced   runReport `json:"fenced"`
	OK       bool      `json:"ok"`
	Verdict  string    `json:"verdict"`
	Metrics  string    `json:"metrics_url,omitempty"` // with -metrics: where they are served
	Timeline string    `json:"timeline,omitempty"`    // with -timeline: the SVG file written
}

// settings is the configuration as reported in JSON.
type settings struct {
	Driver          string  `json:"driver"`
	Locks           string  `json:"locks"`
	Table           string  `json:"table"`
	Workers         int     `json:"workers"`
	Rounds          int     `json:"rounds"`
	DurationLimitMS int64   `json:"duration_limit_ms"`
	TTLMS           int64   `json:"ttl_ms"`
	WorkMS          float64 `json:"work_ms"`
	PauseProb       float64 `json:"pause_prob"`
	PartitionProb   float64 `json:"partition_prob"`
	Seed            uint64  `json:"seed"`
	Bind            string  `json:"bind"`
	Workload        string  `json:"workload,omitempty"`     // process mode
	EtcdMembers     int     `json:"etcd_members,omitempty"` // etcd-embedded
	Failover        bool    `json:"failover,omitempty"`
	Failovers       int     `json:"failovers,omitempty"` // leader kills per run
}

// newSettings is cfg as the JSON report shows it.
func newSettings(cfg config) settings {
	s := settings{
		Driver: cfg.Driver, Locks: cfg.Locks, Table: cfg.Table, Workers: cfg.Workers, Rounds: cfg.Rounds,
		DurationLimitMS: cfg.Duration.Milliseconds(), TTLMS: cfg.TTL.Milliseconds(),
		WorkMS:    float64(cfg.Work) / float64(time.Millisecond),
		PauseProb: cfg.PauseProb, PartitionProb: cfg.PartitionProb, Seed: cfg.Seed, Bind: cfg.Bind,
		Failover: cfg.Failover,
	}
	if cfg.Procs > 0 {
		s.Workload = cfg.Workload
	}
	if cfg.Failover {
		s.Failovers = max(cfg.Failovers, 1)
	}
	if cfg.Locks == locksEtcdEmbedded {
		s.EtcdMembers = cfg.EtcdMembers
	}
	return s
}

// runReport is the outcome of one run.
type runReport struct {
	Name                string `json:"-"`
	Bind                string `json:"-"`
	Driver              string `json:"driver"`                // database/sql driver name
	Rounds              int64  `json:"rounds"`                // leases acquired
	Committed           int64  `json:"committed"`             // increments whose Commit returned nil
	FinalBalance        int64  `json:"final_balance"`         // balance at the end
	LostUpdates         int64  `json:"lost_updates"`          // committed - final_balance
	InvariantHolds      bool   `json:"invariant_holds"`       // final_balance == committed
	FencedRejections    int64  `json:"fenced_rejections"`     // writes refused with fencedsql.ErrFenced
	LeaseRefusals       int64  `json:"lease_refusals"`        // Commits refused with lockclient.ErrLeaseLost
	LeasesLost          int64  `json:"leases_lost"`           // leases declared lost (client or service)
	LateWrites          int64  `json:"late_writes"`           // writes made after an injected fault
	LateWritesCommitted int64  `json:"late_writes_committed"` // ... whose Commit returned nil
	Pauses              int64  `json:"pauses"`
	Partitions          int64  `json:"partitions"`
	ReleasesUnconfirmed int64  `json:"releases_unconfirmed,omitempty"` // Releases whose outcome was unknown (ErrUnavailable)
	OtherErrors         int64  `json:"other_errors"`
	FirstError          string `json:"first_error,omitempty"`
	LastToken           uint64 `json:"last_token"` // last fencing token issued
	DurationMS          int64  `json:"duration_ms"`

	// Process mode (-procs).
	Processes              int            `json:"processes,omitempty"`
	Workload               string         `json:"workload,omitempty"`        // transfer: Committed counts transfers, FinalBalance sums the accounts
	InitialBalance         int64          `json:"initial_balance,omitempty"` // transfer: the accounts' sum at the start
	Accounts               int            `json:"accounts,omitempty"`
	LeaseCheckSkips        int64          `json:"lease_check_skips,omitempty"` // writes not sent: the lease check before them failed
	AcquireErrors          int64          `json:"acquire_errors,omitempty"`    // Acquire gave up (the service unreachable until the run's end)
	FreezesOfHolders       int64          `json:"faults_on_holders,omitempty"` // faults whose victim held a lease
	CriticalSectionsPerSec float64        `json:"critical_sections_per_sec,omitempty"`
	Check                  *historyCheck  `json:"check,omitempty"`   // the history checker's verdict
	Planted                *attemptRecord `json:"planted,omitempty"` // -mutate lost-update: the write planted after the run

	// With -failover: each kill of the etcd leader during the run.
	Failovers []failoverReport `json:"failovers,omitempty"`

	// With -metrics (fenced run): fencedsql.fenced_rejections for the table, read from
	// the Prometheus endpoint's registry. It must equal FencedRejections.
	MetricsFencedRejections *int64 `json:"metrics_fenced_rejections,omitempty"`
}

// violations is what a run broke: with the history checker (process mode) its
// violations, else the updates it lost (the balance differs from the committed count).
func (r *runReport) violations() int64 {
	if r.Check != nil {
		return r.Check.Violations
	}
	if r.LostUpdates < 0 {
		return -r.LostUpdates
	}
	return r.LostUpdates
}

func (rep *report) judge() {
	unfenced, fenced := rep.Unfenced, rep.Fenced
	switch {
	case fenced.Check != nil && fenced.violations() != 0:
		rep.Verdict = fmt.Sprintf("FAIL: the checker found %d violations in the fenced run's history (%d updates lost): fencing did not hold",
			fenced.violations(), fenced.LostUpdates)
	case fenced.LostUpdates != 0:
		rep.Verdict = fmt.Sprintf("FAIL: the fenced run lost %d updates (committed %d, final balance %d): fencing did not hold",
			fenced.LostUpdates, fenced.Committed, fenced.FinalBalance)
	case unfenced.violations() <= 0:
		rep.Verdict = fmt.Sprintf("INCONCLUSIVE: the unfenced run lost no update (%d late writes), so the faults were too weak "+
			"to show the problem; raise -pause-prob or -rounds, or try another -seed", unfenced.LateWrites)
	case fenced.Workload == workloadTransfer:
		rep.OK = true
		rep.Verdict = fmt.Sprintf("PASS: with the lock alone the checker found %d violations in %d transfers (%d ledger entries on stale balances, money drift %+d); "+
			"with fencedsql it found none in %d transfers, and the database refused %d late writes",
			unfenced.violations(), unfenced.Committed, unfenced.LostUpdates, unfenced.FinalBalance-unfenced.InitialBalance, fenced.Committed, fenced.FencedRejections)
	case fenced.Check != nil:
		rep.OK = true
		rep.Verdict = fmt.Sprintf("PASS: with the lock alone the checker found %d violations (%d of %d committed increments lost); "+
			"with fencedsql it found none in %d critical sections, and the database refused %d late writes",
			unfenced.violations(), unfenced.LostUpdates, unfenced.Committed, fenced.Rounds, fenced.FencedRejections)
	default:
		rep.OK = true
		rep.Verdict = fmt.Sprintf("PASS: with the lock alone %d of %d committed increments were silently lost; "+
			"with fencedsql none were, and the database refused %d late writes", unfenced.LostUpdates, unfenced.Committed, fenced.FencedRejections)
	}
	if rep.OK && fenced.FencedRejections == 0 {
		rep.Verdict += " (note: no late write came after a newer holder's, so fencing was not exercised)"
	}
}

// writeReport prints the human-readable report.
func writeReport(w io.Writer, rep report) {
	cfg := rep.Config
	howLong := "1.5-3 TTLs"
	if lag := cfg.serviceLag(); lag > 0 {
		howLong += fmt.Sprintf(" + %v (the service keeps a lease up to that much longer)", lag)
	}
	if cfg.Procs > 0 {
		accounts := "one account"
		if cfg.Accounts > 1 {
			accounts = fmt.Sprintf("%d accounts", cfg.Accounts)
		}
		fmt.Fprintf(w, "fencedsql fault drill, process mode: %d worker processes on %s, lease TTL %v, seed %d, %s database, %s lock service\n",
			cfg.Procs, accounts, cfg.TTL, cfg.Seed, cfg.Driver, describeLocks(cfg))
		fmt.Fprintf(w, "faults: every ~%v the coordinator freezes a worker with SIGSTOP (%.0f%%) or cuts its proxy to the lock service, for %s;\n"+
			"        workers check their lease, then compute for ~%v, then write: a freeze after the check makes a late write\n\n",
			cfg.FaultEvery, 100*cfg.PauseProb/(cfg.PauseProb+cfg.PartitionProb), howLong, cfg.Work)
	} else {
		fmt.Fprintf(w, "fencedsql fault drill: %d workers on one account, lease TTL %v, seed %d, %s database, %s lock service\n",
			cfg.Workers, cfg.TTL, cfg.Seed, cfg.Driver, describeLocks(cfg))
		fmt.Fprintf(w, "faults: holders paused (p=%g) or cut off from the lock service (p=%g) for %s between read and write;\n"+
			"        both runs use the same schedule, and the late writer never checks its lease before writing\n\n",
			cfg.PauseProb, cfg.PartitionProb, howLong)
	}
	for _, r := range []*runReport{&rep.Unfenced, &rep.Fenced} {
		writeRun(w, r)
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "verdict: "+rep.Verdict)
}

// describeLocks names the lock service for the report's first line.
func describeLocks(c config) string {
	switch c.Locks {
	case locksEtcdEmbedded:
		desc := fmt.Sprintf("embedded etcd (%d member", c.EtcdMembers)
		if c.EtcdMembers != 1 {
			desc += "s"
		}
		switch {
		case c.Failover && c.Failovers > 1:
			desc += fmt.Sprintf(", leader killed %d times in each run", c.Failovers)
		case c.Failover:
			desc += ", leader killed half-way through each run"
		}
		return desc + ")"
	case locksEtcd:
		return "etcd (" + c.LockEndpoints + ")"
	case locksRedis:
		if opts, err := redisOptions(c.LockEndpoints); err == nil {
			return "redis (" + opts.Addr + ")" // not the URL: it may hold a password
		}
	case locksSQL:
		return "sql (lease table " + lockTable(c.Table) + ")"
	}
	return c.Locks
}

// writeRun prints one run's part of the report.
func writeRun(w io.Writer, r *runReport) {
	what := "the lock alone"
	if r.Name == "fenced" {
		what = "the lock + fencing tokens checked by the database"
	}
	fmt.Fprintf(w, "%s run (driver %q: %s)\n", r.Name, r.Driver, what)
	if r.Workload == workloadTransfer {
		fmt.Fprintf(w, "  committed transfers  %6d   (%d rounds, two leases each)\n", r.Committed, r.Rounds)
		sum := "the balances add up to what they started with"
		if r.FinalBalance != r.InitialBalance {
			sum = fmt.Sprintf("INVARIANT BROKEN: money was created or destroyed (started at %d)", r.InitialBalance)
		}
		fmt.Fprintf(w, "  sum of balances      %6d   %s\n", r.FinalBalance, sum)
		fmt.Fprintf(w, "  overwritten entries  %6d   (ledger entries committed on a stale balance)\n", r.LostUpdates)
	} else {
		fmt.Fprintf(w, "  committed increments %6d   (%d rounds)\n", r.Committed, r.Rounds)
		fmt.Fprintf(w, "  final balance        %6d\n", r.FinalBalance)
		invariant := "invariant holds: balance == committed"
		if r.LostUpdates > 0 {
			invariant = "INVARIANT BROKEN: committed increments were silently overwritten"
		} else if r.LostUpdates < 0 {
			invariant = "INVARIANT BROKEN: the balance exceeds the committed increments"
		}
		fmt.Fprintf(w, "  lost updates         %6d   %s\n", r.LostUpdates, invariant)
	}
	faults := "pauses"
	if r.Check != nil {
		faults = "freezes"
	}
	late := fmt.Sprintf("(after %d %s, %d partitions; %d committed", r.Pauses, faults, r.Partitions, r.LateWritesCommitted)
	if r.Name == "fenced" && r.LateWritesCommitted > 0 {
		late += " before any newer holder touched the row"
	}
	fmt.Fprintf(w, "  late writes          %6d   %s)\n", r.LateWrites, late)
	fmt.Fprintf(w, "  fenced rejections    %6d   (refused by the database: fencedsql.ErrFenced)\n", r.FencedRejections)
	if m := r.MetricsFencedRejections; m != nil {
		agree := "the same count, read from the Prometheus endpoint"
		if *m != r.FencedRejections {
			agree = "MISMATCH with the drill's own count"
		}
		fmt.Fprintf(w, "  fenced (metric)      %6d   (%s, %s)\n", *m, promFencedRejections, agree)
	}
	if r.Bind == "lease" || r.LeaseRefusals > 0 {
		fmt.Fprintf(w, "  commit refusals      %6d   (Commit refused: lockclient.ErrLeaseLost)\n", r.LeaseRefusals)
	}
	if r.Check != nil {
		fmt.Fprintf(w, "  lease check refused  %6d   (the lease was already lost before the write: not sent)\n", r.LeaseCheckSkips)
	}
	fmt.Fprintf(w, "  leases lost          %6d\n", r.LeasesLost)
	if r.ReleasesUnconfirmed > 0 {
		fmt.Fprintf(w, "  releases unconfirmed %6d   (the lock service could not be reached: the lock stayed held until it expired)\n", r.ReleasesUnconfirmed)
	}
	for _, failover := range r.Failovers {
		switch {
		case failover.Error != "":
			fmt.Fprintf(w, "  failover             after %d rounds: %s\n", failover.RoundsBefore, failover.Error)
		default:
			fmt.Fprintf(w, "  failover             killed the etcd leader %s at %.1fs (after %d rounds); %s elected %.1fs later, %s back %.1fs after the kill\n",
				failover.Killed, float64(failover.AtMS)/1000, failover.RoundsBefore, failover.NewLeader, float64(failover.ElectedAfterMS)/1000,
				failover.Killed, float64(failover.RestartedAfterMS)/1000)
		}
	}
	if r.OtherErrors > 0 {
		fmt.Fprintf(w, "  other errors         %6d   (first: %s)\n", r.OtherErrors, r.FirstError)
	}
	fmt.Fprintf(w, "  duration             %6.1fs\n", time.Duration(r.DurationMS*int64(time.Millisecond)).Seconds())
	if c := r.Check; c != nil {
		fmt.Fprintf(w, "  throughput           %6.0f   critical sections per second, %d processes\n", r.CriticalSectionsPerSec, r.Processes)
		if p := r.Planted; p != nil {
			fmt.Fprintf(w, "  planted (-mutate)    worker-%d's write with token %d (%d -> %d) replayed on account %d after the run\n",
				p.Worker, p.Token, p.Read, p.Written, p.Account)
		}
		fmt.Fprintf(w, "  %s\n", c.summary())
		for _, e := range c.Examples {
			fmt.Fprintf(w, "    - %s\n", e)
		}
	}
}
