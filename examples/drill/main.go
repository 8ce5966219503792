// Command drill is fencedsql's fault drill. On a real database and with real leases it
// shows that a distributed lock alone loses updates when a holder is paused (or cut off
// from the lock service) for longer than its lease, and that fencing tokens checked by
// the database stop it.
//
//	go run ./examples/drill                  # SQLite in a temporary file, no server, ~15 s
//	go run ./examples/drill -json            # one JSON object on stdout
//	go run ./examples/drill -seed 7 -v       # another fault schedule, with an event log
//	go run ./examples/drill -driver postgres -dsn 'postgres://app:secret@localhost/scratch'
//	go run ./examples/drill -driver mysql -dsn 'app:secret@tcp(localhost:3306)/scratch'
//	go run ./examples/drill -timeline drill.svg  # also draw who held the lease when
//	go run ./examples/drill -metrics 127.0.0.1:9464 -metrics-wait 60s  # and serve Prometheus metrics
//
// and on real lock services (see Lock services below):
//
//	go run ./examples/drill -locks etcd-embedded            # etcd servers started in the process, ~30 s
//	go run ./examples/drill -locks etcd-embedded -failover  # 3 members, the leader killed in each run
//	go run ./examples/drill -locks etcd -lock-endpoints http://etcd-1:2379,http://etcd-2:2379,http://etcd-3:2379
//	go run ./examples/drill -locks redis -lock-endpoints localhost:6379
//	go run ./examples/drill -driver postgres -dsn 'postgres://app:secret@localhost/scratch' -locks sql
//
// # What it does
//
// -workers workers (default 6) share one account row. Each worker is its own
// lockclient.Client, that is its own "process", on one lock service (-locks; by default
// the in-process memlock). Every round a worker:
//
//  1. acquires the lease "account:1" and so gets a fencing token t;
//  2. in a transaction bound to t, claims the row with t (SELECT … FOR UPDATE through the
//     fenced driver; a no-op UPDATE on SQLite, which has no FOR UPDATE) and reads the
//     balance b, then commits;
//  3. works for a few milliseconds (-work);
//  4. in a transaction bound to t, runs UPDATE accounts SET balance = b+1 WHERE id = 1
//     and commits;
//  5. releases the lease.
//
// Faults come from a random generator seeded with -seed, one stream per worker, so a
// seed always gives the same fault schedule. After step 3, with probability -pause-prob
// the worker is paused for 1.5 to 3 lease TTLs: its lock client's requests are held by
// the lock service (memlock's Pause, or the worker's proxy to a networked service, see
// below: renewals stop arriving) and the worker sleeps, like a process frozen by a GC
// pause or CPU throttling. With probability -partition-prob it is instead cut off from
// the lock service (memlock's Partition, or the proxy) while its work drags on for as
// long. Either way the lease expires at the service and
// another worker is granted the lock with a newer token. Then the first worker wakes up
// and goes on to step 4 as if nothing had happened. It deliberately does not look at
// lease.Lost() before writing: a real paused process cannot know it was paused, and a
// check-then-write is racy anyway (the pause can fall between the check and the write).
//
// The same workload and fault schedule run twice:
//
//   - unfenced: through the plain driver ("sqlite", "pgx" or "mysql"). The lock is the
//     only protection. A late write overwrites the balance with a value computed from a
//     stale read, and the increments committed meanwhile by the newer holders are lost.
//   - fenced: through fencedsql's driver ("fenced-sqlite", "fenced-pgx",
//     "fenced-mysql") with fenced_tables=accounts in the DSN. The table has the columns
//     fence_token BIGINT NOT NULL DEFAULT 0 and version BIGINT NOT NULL DEFAULT 0, and
//     the same UPDATE is rewritten so that the database itself refuses it when a newer
//     token already wrote the row: the late write fails with fencedsql.ErrFenced and
//     changes nothing.
//
// The write transaction is bound with fencedsql.WithToken(ctx, lease.Token()). Binding
// it with fencedsql.WithLease(ctx, lease) (flag -bind lease) adds a second, client-side
// defence: Commit refuses with lockclient.ErrLeaseLost once the lease is known to be
// lost. The default keeps that check out of the way so that the report shows the
// database doing the fencing.
//
// Why step 2 claims the row: a fencing token protects the row from writes older than
// the newest one that reached it. A new holder that only read the row before an old
// holder's late write landed would compute its update from a value that is about to
// change, and its own, newer write would be accepted and erase the late one. Claiming
// the row with your token before reading it (in the same transaction) closes that gap:
// a late write lands either before the stamp, and the new holder reads its result, or
// after it, and the database refuses it. The unfenced run executes the same statements.
//
// # Lock services
//
// -locks chooses the lock service; each run (unfenced, fenced) gets a fresh one, or its
// own key prefix or lease table on a shared one:
//
//   - mem (default): memlock, in the process. Its Pause and Partition make the faults.
//   - etcd-embedded: real etcd servers (go.etcd.io/etcd/server/v3/embed) started in the
//     process on loopback ports, a new cluster for each run, through etcdlock.
//     -etcd-members sets the cluster size (default 1). -failover (3 members unless
//     -etcd-members says otherwise) kills the leader once in each run, abruptly, when
//     half of the run's rounds were granted; -failovers N kills it N times, evenly
//     spread, and restarts the killed member from its data directory after each new
//     leader is elected, so that the cluster keeps its majority for the next kill. The
//     workers' Acquire retries through the
//     election (lockclient.ErrUnavailable), a Release that fails is counted as
//     unconfirmed, and the report names the killed and the new leader. The members tick
//     every 50ms with a 500ms election timeout, so a new leader takes about a second and
//     etcd's minimum lease TTL is 1s.
//   - etcd: an etcd cluster at -lock-endpoints (comma-separated http:// client URLs or
//     host:port; no TLS), through etcdlock, keys under -lock-prefix (default: a random
//     /fencedsql-drill/<hex>/) followed by the run's name.
//   - redis: a Redis server at -lock-endpoints (host:port or redis:// URL), through
//     redislock, keys under -lock-prefix (default: a random fencedsql-drill:<hex>:)
//     followed by the run's name; the drill deletes them at the end.
//   - sql: a sqllock lease table, <table>_locks, in the drill's PostgreSQL or
//     MySQL/MariaDB database or in the database of -lock-dsn (a pgx URL or keyword/value
//     DSN, or a go-sql-driver/mysql DSN; TCP, not a Unix socket). Each run creates it
//     (sqllock.CreateTable) and drops it with its token sequence, counter or procedure.
//
// With every service but mem, each worker's lock client (its etcd, Redis or database
// client) connects through a loopback TCP proxy of its own (internal/netproxy), and the
// faults act on that proxy: a pause blocks it, so the worker's requests wait in the proxy
// while the worker sleeps and are delivered late when it wakes up; a partition blocks it
// too, and when it heals resets every connection before unblocking, so the requests that
// were held are lost and the client reconnects. With etcd every worker has one proxy per
// member. The database writes do not go through the proxy.
//
// Defaults differ per service when -ttl and -rounds are not given: mem 300ms and 40
// rounds; redis and sql 500ms and 40 rounds (a round trip through the network and the
// proxy deserves more slack than an in-process call); etcd and etcd-embedded 1s and 10
// rounds. etcd lease TTLs are whole seconds, so -ttl must be at least 1s there. Besides,
// etcdlock grants the session lease for the TTL plus etcdlock.DefaultLeaseSlack, rounded
// up to whole seconds, and etcd's lessor looks for expired leases every 500ms: a paused
// holder's lock stays held at etcd for up to 2.5s after its last renewal with a 1s TTL.
// So that the lock really moves to another worker before the late write, a fault on
// etcd lasts 1.5 to 3 TTLs plus that lag beyond the TTL (3 to 4.5s with a 1s TTL), and
// since every fault stalls the other workers until etcd expires the lease, the default
// is fewer rounds. A default etcd-embedded drill takes about 30 seconds.
//
// # Process mode
//
//	go run ./examples/drill -procs 8 -json      # 8 worker processes, SQLite, the coordinator's memlock, ~20 s
//	go run ./examples/drill -procs 8 -locks etcd-embedded -failover -driver postgres -dsn '...'
//	go run ./examples/drill -long -driver postgres -dsn '...'  # 10,000 critical sections per run
//	go run ./examples/drill -procs 4 -mutate lost-update       # the checker's mutation test: must FAIL
//	go run ./examples/drill -procs 8 -workload transfer -json  # two-lock transfers with a ledger (transfer.go)
//
// -procs N makes every worker a separate OS process: the drill starts its own executable
// again with FENCEDSQL_DRILL_WORKER set to the worker's settings (JSON), and the worker
// reports what it does as JSON lines on its stdout. Each worker process has its own lock
// client and database pool, and reaches the lock service through a loopback proxy of its
// own (internal/netproxy) that lives in the coordinator. memlock cannot be shared across
// processes, so with -locks mem (the default) the coordinator serves one memlock.Service
// to the workers over HTTP on loopback (lockserver.go: one POST per Session call; expiry
// is judged by the coordinator's memlock, on its clock); -locks etcd-embedded runs the
// etcd members in the coordinator, and -locks etcd uses an external cluster.
//
// The coordinator injects the faults: at exponentially distributed intervals (mean
// -fault-every, 1 TTL by default, 2 with -long) it picks a worker — one that holds a lease if any
// does — and either freezes it with SIGSTOP, thawing it with SIGCONT 1.5 to 3 TTLs
// later (plus etcd's lag), or partitions it by blocking its proxies for as long, then
// resetting their connections. -pause-prob : -partition-prob is the mix of the two. A
// freeze is a real stop-the-world pause: the worker's lease watchdog stops with it, like
// a long GC pause or a throttled container. At most half of the workers are faulted at
// once.
//
// Workers do not skip their lease check: every round a worker acquires the lease of one
// of -accounts accounts (each account its own lock), claims and reads the row (and
// records the read), checks lease.Err() — which also enforces the lease's local deadline
// — then computes for -work (5ms by default) and writes balance+1 (and records the
// write). A freeze that falls between the check and the write is invisible to the check:
// the worker wakes up and writes late, the natural late writer.
//
// The history: each read and each write inserts a row into <table>_history in the same
// transaction (worker, attempt, kind, token, value read, value written), so a row is
// there if and only if its transaction committed; per account the rows are numbered in
// commit order (the row lock is held from the first statement to the commit). Each worker
// also reports every write attempt and the outcome it saw (committed, fenced, refused at
// Commit, skipped by the lease check, error). After the run the checker (history.go)
// proves, per account: committed write tokens never decrease; no write committed with a
// token older than one already committed (by a newer holder's claim or write); every
// committed write was computed from the balance at that point (no increment
// overwritten); the final balance equals the committed increments; and every write a
// worker saw commit is in the history, and none it saw refused is. The JSON report carries
// the verdict under "check" in each run; the verdict line and exit status use it: the
// unfenced run must show violations, the fenced run none. -mutate lost-update replays
// an old committed write through the plain driver after the fenced run, as a late writer
// would: the checker must catch it (exit status 3).
//
// -long is the long mode: 8 processes, 16 accounts, 10,000 critical sections per run, an
// embedded 3-member etcd whose leader is killed three times in each run (-failovers 3),
// unless the flags say otherwise. With -timeline, the SVG has a lane per process: its leases with
// their tokens, its freezes (grey) and partitions (hatched), and every late write: red
// where it committed, a black cross where the database refused it.
//
// # Reading the report
//
// For each run it prints the increments whose commit returned success (committed), the
// final balance, and lost updates = committed - final balance; the invariant is that
// none are lost. Late writes are the writes made after an injected fault: in the
// unfenced run they all succeed; in the fenced run most are fenced rejections (refused by
// the database), and a few may succeed harmlessly because they landed before any newer
// holder touched the row. Leases lost counts leases the lock client or the lock service
// declared lost, one per injected fault (and any other the client gave up on, such as
// during an etcd election). Releases unconfirmed (networked services only, when not zero)
// counts Releases that could not reach the service: the lock stayed held until its lease
// expired there. With -failover, a line per kill says which etcd leader was killed when,
// and how long the election of the next one took. The last line is the verdict.
//
// # Timeline
//
// -timeline FILE writes an SVG picture of both runs (pure standard library, viewable in
// any browser): a panel per run, a lane per worker, a bar for every lease from its grant
// to its release (blue) or to the moment it was lost (orange), grey spans for injected
// pauses (hatched: cut off from the lock service), and a marker for every late write: a
// red dot where it committed (in the unfenced run, each one is an overwrite), a black
// cross where the database rejected it (fencedsql.ErrFenced), a purple square where
// Commit refused it (lockclient.ErrLeaseLost, with -bind lease). Hovering a shape shows
// its worker, token and times.
//
// # Metrics
//
// -metrics ADDR serves the fenced run's metrics in the Prometheus text format at
// http://ADDR/metrics (port 0 picks a free port; the address is printed on stderr): the
// lock clients' (lockclient.WithMeterProvider) and the fenced driver's
// (fencedsql.WithMeterProvider), recorded by an OpenTelemetry MeterProvider whose reader
// is the OpenTelemetry Prometheus exporter. Because a MeterProvider cannot travel in a
// DSN, the fenced run then opens its database with fencedsql.OpenDB over the plain
// driver (fencedsql.DSNConnector), the dialect and fencedsql.Guard(table) instead of
// sql.Open("fenced-…"). OpenTelemetry names become Prometheus names with dots turned into
// underscores and _total added to counters: fencedsql.fenced_rejections is
// fencedsql_fenced_rejections_total{db_collection_name="accounts",db_system_name="sqlite",…}.
// The report adds that counter's value, read from the endpoint's registry, under the
// drill's own count of fenced rejections; the two must agree (exit status 1 if not). The
// server stays up until the report is printed, and -metrics-wait keeps it up longer so
// that a Prometheus server (or curl) can scrape it.
//
// # Exit status
//
// 0 when the unfenced run lost updates and the fenced run lost none; 1 when the drill
// could not run (database unreachable, table already exists, metrics address taken, ...)
// or the fencing metric disagreed with the drill's count; 2 for bad flags; 3
// when the fenced run lost updates (fencing failed); 4 when the unfenced run lost none,
// which means the faults were too weak to show anything (raise -pause-prob or -rounds,
// or try another -seed).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	// Each dialect package registers its fenced driver name ("fenced-sqlite",
	// "fenced-pgx", "fenced-mysql") and imports the plain driver it wraps, which
	// registers "sqlite", "pgx" and "mysql".
	_ "github.com/fencedsql/fencedsql/dialects/mysql"
	_ "github.com/fencedsql/fencedsql/dialects/postgres"
	_ "github.com/fencedsql/fencedsql/dialects/sqlite"
)

// Exit codes.
const (
	exitOK           = 0
	exitError        = 1
	exitUsage        = 2
	exitFencedLost   = 3
	exitInconclusive = 4
)

func main() {
	if spec, ok := os.LookupEnv(workerEnv); ok {
		// A worker process of process mode (-procs), started by the coordinator.
		os.Exit(workerMain(spec, os.Stdin, os.Stdout))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stderr))
	stop()
	os.Exit(code)
}

// isTerminal reports whether f looks like a terminal (a character device).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// realMain parses args, runs the drill and writes the report; it returns the exit code.
// live asks for a self-updating progress line on stderr.
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer, live bool) int {
	return realMainHooks(ctx, args, stdout, stderr, live, hooks{})
}

// realMainHooks is realMain with test hooks.
func realMainHooks(ctx context.Context, args []string, stdout, stderr io.Writer, live bool, h hooks) int {
	cfg, asJSON, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "drill: %v\n", err)
		return exitUsage
	}
	cfg.hooks = h
	if cfg.Verbose || live {
		cfg.Log = stderr
		cfg.Live = live && !cfg.Verbose
	}
	if cfg.MetricsAddr != "" {
		// Served from before the first run until after the report (and -metrics-wait).
		ms, err := startMetrics(cfg.MetricsAddr)
		if err != nil {
			fmt.Fprintf(stderr, "drill: %v\n", err)
			return exitError
		}
		defer func() {
			if err := ms.Close(); err != nil {
				fmt.Fprintf(stderr, "drill: closing the metrics server: %v\n", err)
			}
		}()
		cfg.metrics = ms
		fmt.Fprintf(stderr, "drill: serving the fenced run's metrics on %s\n", ms.URL())
		if h.metricsListening != nil {
			h.metricsListening(ms.Addr())
		}
	}

	rep, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "drill: %v\n", err)
		return exitError
	}
	if rep.Timeline != "" {
		fmt.Fprintf(stderr, "drill: timeline written to %s\n", rep.Timeline)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "drill: %v\n", err)
			return exitError
		}
	} else {
		writeReport(stdout, rep)
	}
	if cfg.MetricsWait > 0 {
		fmt.Fprintf(stderr, "drill: serving the metrics on %s for %v more (interrupt to stop)\n", cfg.metrics.URL(), cfg.MetricsWait)
		sleep(ctx, cfg.MetricsWait)
	}
	if m := rep.Fenced.MetricsFencedRejections; m != nil && *m != rep.Fenced.FencedRejections {
		fmt.Fprintf(stderr, "drill: the metric %s says %d fenced rejections, the drill counted %d\n",
			promFencedRejections, *m, rep.Fenced.FencedRejections)
		return exitError
	}
	switch {
	case rep.Fenced.LostUpdates != 0 || rep.Fenced.violations() != 0:
		if asJSON {
			fmt.Fprintln(stderr, "drill: "+rep.Verdict)
		}
		return exitFencedLost
	case rep.Unfenced.violations() <= 0:
		if asJSON {
			fmt.Fprintln(stderr, "drill: "+rep.Verdict)
		}
		return exitInconclusive
	}
	return exitOK
}

func parseFlags(args []string, stderr io.Writer) (config, bool, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("drill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./examples/drill [flags]\n\n"+
			"Runs the same workload with injected pauses twice, without and with fencing tokens,\n"+
			"and reports the updates each run lost. See `go doc ./examples/drill`.\n\n"+
			"Lock services (-locks): mem (default), etcd-embedded [-etcd-members N] [-failover],\n"+
			"etcd -lock-endpoints URL,..., redis -lock-endpoints HOST:PORT, sql [-lock-dsn DSN].\n"+
			"Each worker reaches a networked service through a loopback proxy of its own, which\n"+
			"the faults block (pause: requests delivered late) or block and reset (partition).\n"+
			"Defaults per service: -ttl 300ms/-rounds 40 (mem), 500ms/40 (redis, sql), 1s/10 (etcd).\n\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.Driver, "driver", cfg.Driver, "database: sqlite, postgres or mysql (MySQL and MariaDB)")
	fs.StringVar(&cfg.DSN, "dsn", "", "database DSN (pgx URL, go-sql-driver/mysql DSN or SQLite file: URI); empty with sqlite: a temporary file deleted at exit")
	fs.StringVar(&cfg.Table, "table", cfg.Table, "name of the table the drill creates for each run and drops afterwards (it must not exist)")
	fs.StringVar(&cfg.Locks, "locks", cfg.Locks, "lock service: mem (in-process memlock), etcd (an etcd cluster at -lock-endpoints), etcd-embedded (etcd servers started in this process),\n"+
		"redis (a Redis server at -lock-endpoints) or sql (a sqllock lease table in the drill's database, or -lock-dsn's)")
	fs.StringVar(&cfg.LockEndpoints, "lock-endpoints", "", "with -locks etcd: comma-separated client URLs (http://host:port or host:port); with -locks redis: host:port or a redis:// URL")
	fs.StringVar(&cfg.LockDSN, "lock-dsn", "", "with -locks sql: PostgreSQL or MySQL/MariaDB DSN of the lease table's database (default: -dsn)")
	fs.StringVar(&cfg.LockPrefix, "lock-prefix", "", "with -locks etcd, etcd-embedded or redis: key prefix of the drill's locks, followed by the run's name (default: a random one per drill)")
	fs.IntVar(&cfg.EtcdMembers, "etcd-members", cfg.EtcdMembers, "with -locks etcd-embedded: number of etcd servers (3 with -failover unless given)")
	fs.BoolVar(&cfg.Failover, "failover", false, "with -locks etcd-embedded: kill the etcd leader in each run, when half of its rounds are done")
	fs.IntVar(&cfg.Failovers, "failovers", 0, "with -failover: kill the leader this many times in each run, evenly spread, restarting the killed member after each (default 1)")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "concurrent workers, each with its own lock client")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds per worker and run (0: until -duration); 10 by default with -locks etcd or etcd-embedded")
	fs.DurationVar(&cfg.Duration, "duration", 0, "stop starting rounds after this long in each run (0: run all -rounds); without -rounds it alone bounds the run")
	fs.DurationVar(&cfg.TTL, "ttl", cfg.TTL, "lease time-to-live; by default 500ms with -locks redis or sql, 1s with etcd (whose lease TTLs are whole seconds: at least 1s)")
	fs.DurationVar(&cfg.Work, "work", cfg.Work, "simulated work between the read and the write (each round draws 0.5x to 1.5x)")
	fs.Float64Var(&cfg.PauseProb, "pause-prob", cfg.PauseProb, "probability per round that the holder pauses 1.5-3 TTLs between its read and its write (with etcd: plus the time etcd may keep the lease longer)")
	fs.Float64Var(&cfg.PartitionProb, "partition-prob", cfg.PartitionProb, "probability per round that the holder is cut off from the lock service for as long as a pause, between its read and its write")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the fault schedule (the same seed gives the same schedule)")
	fs.StringVar(&cfg.Bind, "bind", cfg.Bind, "how writes carry the lease: token (fencedsql.WithToken: only the database fences) or lease (fencedsql.WithLease: Commit also refuses once the lease is lost)")
	fs.BoolVar(&cfg.Verbose, "v", false, "log faults, late writes and progress on stderr")
	fs.StringVar(&cfg.Timeline, "timeline", "", "write an SVG picture of both runs to this file: a lane per worker, lease bars, faults, late writes committed and rejected")
	fs.StringVar(&cfg.MetricsAddr, "metrics", "", "serve the fenced run's metrics (lock client and fencedsql) for Prometheus at http://ADDR/metrics, e.g. 127.0.0.1:9464 (port 0: any free port)")
	fs.DurationVar(&cfg.MetricsWait, "metrics-wait", 0, "with -metrics: keep serving this long after the report")
	fs.IntVar(&cfg.Procs, "procs", 0, "process mode: run N worker processes (the drill re-executes itself), frozen for real with SIGSTOP/SIGCONT and partitioned by their proxies,\n"+
		"with a history checked after each run; the lock service (-locks mem: a memlock served by this process over loopback; etcd-embedded; etcd) lives outside the workers")
	fs.IntVar(&cfg.Accounts, "accounts", cfg.Accounts, "process mode: accounts (rows), each its own lock; every round picks one at random")
	fs.DurationVar(&cfg.FaultEvery, "fault-every", 0, "process mode: mean interval between faults (freeze or partition of one worker; -pause-prob : -partition-prob is the mix); default 1 TTL")
	fs.StringVar(&cfg.Mutate, "mutate", "", "process mode, the checker's mutation test: lost-update plants a lost update in the fenced run's history after the run (the verdict must then FAIL)")
	fs.StringVar(&cfg.Workload, "workload", cfg.Workload, "process mode: increment (one lock per round, balance+1) or transfer (two locks per round: money moved between two accounts,\n"+
		"both rows and their ledger entries written in one transaction; checked for conservation, per-account chains and token order; -accounts 4 unless given)")
	long := fs.Bool("long", false, "the long mode: -procs 8, -accounts 16, 10,000 critical sections per run, on an embedded 3-member etcd whose leader is killed three times in each run\n"+
		"(-locks etcd-embedded -failover) unless the flags say otherwise; give -driver and -dsn for PostgreSQL or MariaDB")
	asJSON := fs.Bool("json", false, "print one JSON object {\"unfenced\": {...}, \"fenced\": {...}, ...} on stdout instead of the report")
	if err := fs.Parse(args); err != nil {
		return cfg, false, err
	}
	if fs.NArg() > 0 {
		return cfg, false, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if l, ok := locksAliases[cfg.Locks]; ok {
		// Each lock service has its own defaults (see the package comment).
		if !set["ttl"] {
			cfg.TTL = defaultTTL(l)
		}
		if !set["rounds"] {
			cfg.Rounds = defaultRounds(l)
		}
		if cfg.Failover && !set["etcd-members"] {
			cfg.EtcdMembers = 3
		}
	}
	if cfg.Duration > 0 && !set["rounds"] {
		cfg.Rounds = 0
	}
	if *long {
		// The long mode: >= 10,000 critical sections per run across >= 8 processes on an
		// embedded 3-member etcd whose leader is killed three times in each run.
		if !set["procs"] {
			cfg.Procs = 8
		}
		if !set["locks"] {
			cfg.Locks, cfg.EtcdMembers, cfg.Failover = locksEtcdEmbedded, 3, true
			if !set["failovers"] {
				cfg.Failovers = 3
			}
			if !set["ttl"] {
				cfg.TTL = defaultTTL(locksEtcdEmbedded)
			}
		}
		if !set["accounts"] {
			cfg.Accounts = 16
		}
		if !set["rounds"] && !set["duration"] && cfg.Procs > 0 {
			cfg.Rounds = (10000 + cfg.Procs - 1) / cfg.Procs
		}
	}
	if cfg.Workload == workloadTransfer && !set["accounts"] && !*long {
		cfg.Accounts = 4
	}
	if cfg.Procs > 0 {
		if !set["rounds"] && !set["duration"] && !*long {
			cfg.Rounds = 100 // 800 critical sections with 8 processes
			if cfg.Locks == locksEtcd || cfg.Locks == locksEtcdEmbedded {
				cfg.Rounds = 25
			}
		}
		if !set["fault-every"] {
			cfg.FaultEvery = cfg.TTL
			if *long {
				cfg.FaultEvery = 2 * cfg.TTL // the long mode's recorded figures (BENCHMARKS.md)
			}
		}
		if !set["work"] {
			cfg.Work = 5 * time.Millisecond // the window between the lease check and the write
		}
	}
	return cfg, *asJSON, cfg.validate()
}
