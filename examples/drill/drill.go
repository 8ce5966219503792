package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"
	"go.opentelemetry.io/otel/metric"
	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
)

// config is one drill's settings. The zero value is not usable: start from
// defaultConfig.
type config struct {
	Driver        string        // sqlite, postgres or mysql
	DSN           string        // "" with sqlite: a temporary file
	Table         string        // created for each run and dropped afterwards
	Locks         string        // lock service: mem, etcd, etcd-embedded, redis or sql
	LockEndpoints string        // etcd: comma-separated client URLs; redis: host:port or redis:// URL
	LockDSN       string        // sql: database of the lease table; "": DSN
	LockPrefix    string        // etcd, redis: key prefix of the drill's locks; "": a random one
	EtcdMembers   int           // etcd-embedded: cluster size
	Failover      bool          // etcd-embedded: kill the leader once per run, half-way through
	Workers       int           // concurrent workers, each its own lock client
	Rounds        int           // rounds per worker and run; 0: until Duration
	Duration      time.Duration // stop starting rounds after this long; 0: no limit
	TTL           time.Duration // lease time-to-live
	Work          time.Duration // mean simulated work between read and write
	PauseProb     float64       // per round: pause between read and write
	PartitionProb float64       // per round: cut off from the lock service between read and write
	Seed          uint64        // seed of the fault schedule
	Bind          string        // "token" (fencedsql.WithToken) or "lease" (fencedsql.WithLease)

	Verbose bool      // log events and progress lines to Log
	Log     io.Writer // where progress and events go; nil: nowhere
	Live    bool      // one self-updating progress line on Log (a terminal)

	Timeline    string        // write an SVG timeline of both runs to this file; "": none
	MetricsAddr string        // serve the fenced run's metrics for Prometheus here; "": none
	MetricsWait time.Duration // keep serving the metrics this long after the report

	metrics *metricsServer // the server for MetricsAddr, started by realMain
	hooks   hooks
	nonce   string // default key prefix of etcd and Redis locks, set by validate
}

// hooks let tests look inside a drill while it runs.
type hooks struct {
	metricsListening func(addr string) // the metrics server listens on addr
	afterRun         func(name string) // run name ("unfenced", "fenced") has finished
}

func defaultConfig() config {
	return config{
		Driver:        "sqlite",
		Table:         "accounts",
		Locks:         locksMem,
		EtcdMembers:   1,
		Workers:       6,
		Rounds:        40,
		TTL:           300 * time.Millisecond,
		Work:          2 * time.Millisecond,
		PauseProb:     0.05,
		PartitionProb: 0.02,
		Seed:          42,
		Bind:          "token",
	}
}

// backend says how to reach one kind of database with and without fencing.
type backend struct {
	raw, fenced string // database/sql driver names
	numbered    bool   // $n placeholders instead of ?

	// For fencedsql.OpenDB (used with -metrics, to pass a MeterProvider): the plain
	// driver and the dialect the fenced name stands for.
	driver  func() driver.Driver
	dialect fencedsql.Dialect
}

var backends = map[string]backend{
	"sqlite": {raw: "sqlite", fenced: "fenced-sqlite",
		driver: func() driver.Driver { return &msqlite.Driver{} }, dialect: sqlite.Dialect},
	"postgres": {raw: "pgx", fenced: "fenced-pgx", numbered: true,
		driver: stdlib.GetDefaultDriver, dialect: postgres.Dialect},
	"mysql": {raw: "mysql", fenced: "fenced-mysql",
		driver: func() driver.Driver { return &gomysql.MySQLDriver{} }, dialect: mysql.Dialect},
}

var driverAliases = map[string]string{
	"sqlite": "sqlite", "sqlite3": "sqlite",
	"postgres": "postgres", "postgresql": "postgres", "pgx": "postgres", "pg": "postgres",
	"mysql": "mysql", "mariadb": "mysql",
}

func (c *config) validate() error {
	d, ok := driverAliases[c.Driver]
	if !ok {
		return fmt.Errorf("-driver %q: want sqlite, postgres or mysql", c.Driver)
	}
	c.Driver = d
	if err := c.validateLocks(); err != nil {
		return err
	}
	switch {
	case c.DSN == "" && c.Driver != "sqlite":
		return fmt.Errorf("-driver %s needs -dsn", c.Driver)
	case !validIdent(c.Table):
		return fmt.Errorf("-table %q: want a plain identifier (letters, digits, _)", c.Table)
	case c.Workers < 2 || c.Workers > 1000:
		return fmt.Errorf("-workers %d: want 2 to 1000 (a late write needs another worker to overwrite)", c.Workers)
	case c.Rounds < 0:
		return fmt.Errorf("-rounds %d: want >= 0", c.Rounds)
	case c.Duration < 0:
		return fmt.Errorf("-duration %v: want >= 0", c.Duration)
	case c.Rounds == 0 && c.Duration == 0:
		return errors.New("-rounds 0 needs a -duration")
	case c.TTL < 20*time.Millisecond:
		return fmt.Errorf("-ttl %v: want at least 20ms", c.TTL)
	case c.Work < 0:
		return fmt.Errorf("-work %v: want >= 0", c.Work)
	case !(c.PauseProb >= 0 && c.PauseProb <= 1), !(c.PartitionProb >= 0 && c.PartitionProb <= 1),
		c.PauseProb+c.PartitionProb > 1:
		return fmt.Errorf("-pause-prob %g and -partition-prob %g: want probabilities adding up to at most 1", c.PauseProb, c.PartitionProb)
	case c.Bind != "token" && c.Bind != "lease":
		return fmt.Errorf("-bind %q: want token or lease", c.Bind)
	case c.MetricsWait < 0:
		return fmt.Errorf("-metrics-wait %v: want >= 0", c.MetricsWait)
	case c.MetricsWait > 0 && c.MetricsAddr == "":
		return errors.New("-metrics-wait needs -metrics")
	}
	return nil
}

// validateLocks checks the lock service's settings.
func (c *config) validateLocks() error {
	l, ok := locksAliases[c.Locks]
	if !ok {
		return fmt.Errorf("-locks %q: want mem, etcd, etcd-embedded, redis or sql", c.Locks)
	}
	c.Locks = l
	switch {
	case c.LockEndpoints != "" && l != locksEtcd && l != locksRedis:
		return fmt.Errorf("-lock-endpoints is for -locks etcd or redis, not %s", l)
	case c.LockDSN != "" && l != locksSQL:
		return fmt.Errorf("-lock-dsn is for -locks sql, not %s", l)
	case c.LockPrefix != "" && l != locksEtcd && l != locksEtcdEmbedded && l != locksRedis:
		return fmt.Errorf("-lock-prefix is for -locks etcd, etcd-embedded or redis, not %s", l)
	case l == locksEtcdEmbedded && (c.EtcdMembers < 1 || c.EtcdMembers > 7):
		return fmt.Errorf("-etcd-members %d: want 1 to 7 (3 to survive a failover)", c.EtcdMembers)
	case c.Failover && (l != locksEtcdEmbedded || c.EtcdMembers < 3):
		return errors.New("-failover needs -locks etcd-embedded with -etcd-members 3 (or more): " +
			"a cluster that keeps a majority when its leader is killed")
	case (l == locksEtcd || l == locksEtcdEmbedded) && c.TTL < time.Second:
		return fmt.Errorf("-ttl %v: etcd lease TTLs are whole seconds: want at least 1s with -locks %s", c.TTL, l)
	case l == locksSQL && len(lockTable(c.Table)) > 48:
		return fmt.Errorf("-table %q: too long for the lease table name %s (at most 48 characters)", c.Table, lockTable(c.Table))
	}
	switch l {
	case locksEtcd:
		if _, err := etcdEndpoints(c.LockEndpoints); err != nil {
			return err
		}
	case locksRedis:
		if _, err := redisOptions(c.LockEndpoints); err != nil {
			return err
		}
	case locksSQL:
		if _, _, err := c.lockDSN(); err != nil {
			return err
		}
	}
	if c.nonce == "" {
		c.nonce = randomPrefix(l)
	}
	return nil
}

func validIdent(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

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
	EtcdMembers     int     `json:"etcd_members,omitempty"` // etcd-embedded
	Failover        bool    `json:"failover,omitempty"`
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

	// With -failover: the etcd leader killed half-way through the run.
	Failover *failoverReport `json:"failover,omitempty"`

	// With -metrics (fenced run): fencedsql.fenced_rejections for the table, read from
	// the Prometheus endpoint's registry. It must equal FencedRejections.
	MetricsFencedRejections *int64 `json:"metrics_fenced_rejections,omitempty"`
}

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
	lg := &logger{w: cfg.Log, verbose: cfg.Verbose, live: cfg.Live}
	if cfg.Log == nil {
		lg.w = io.Discard
	}
	rep := report{Config: cfg, Settings: settings{
		Driver: cfg.Driver, Locks: cfg.Locks, Table: cfg.Table, Workers: cfg.Workers, Rounds: cfg.Rounds,
		DurationLimitMS: cfg.Duration.Milliseconds(), TTLMS: cfg.TTL.Milliseconds(),
		WorkMS:    float64(cfg.Work) / float64(time.Millisecond),
		PauseProb: cfg.PauseProb, PartitionProb: cfg.PartitionProb, Seed: cfg.Seed, Bind: cfg.Bind,
		Failover: cfg.Failover,
	}}
	if cfg.Locks == locksEtcdEmbedded {
		rep.Settings.EtcdMembers = cfg.EtcdMembers
	}
	var tlUnfenced, tlFenced *timeline
	if cfg.Timeline != "" {
		tlUnfenced, tlFenced = newTimeline("unfenced", cfg.Workers), newTimeline("fenced", cfg.Workers)
	}
	var mp metric.MeterProvider
	if cfg.metrics != nil {
		mp = cfg.metrics.provider
		rep.Metrics = cfg.metrics.URL()
	}
	var err error
	rep.Unfenced, err = runOnce(ctx, cfg, lg, "unfenced", be, be.raw, dsn, dsn, nil, tlUnfenced)
	if err != nil {
		return rep, fmt.Errorf("unfenced run: %w", err)
	}
	if cfg.hooks.afterRun != nil {
		cfg.hooks.afterRun("unfenced")
	}
	rep.Fenced, err = runOnce(ctx, cfg, lg, "fenced", be, be.fenced, addParam(cfg.Driver, dsn, fencedsql.ParamTables+"="+cfg.Table), dsn, mp, tlFenced)
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

func (rep *report) judge() {
	u, f := rep.Unfenced, rep.Fenced
	switch {
	case f.LostUpdates != 0:
		rep.Verdict = fmt.Sprintf("FAIL: the fenced run lost %d updates (committed %d, final balance %d): fencing did not hold",
			f.LostUpdates, f.Committed, f.FinalBalance)
	case u.LostUpdates <= 0:
		rep.Verdict = fmt.Sprintf("INCONCLUSIVE: the unfenced run lost no update (%d late writes), so the faults were too weak "+
			"to show the problem; raise -pause-prob or -rounds, or try another -seed", u.LateWrites)
	default:
		rep.OK = true
		rep.Verdict = fmt.Sprintf("PASS: with the lock alone %d of %d committed increments were silently lost; "+
			"with fencedsql none were, and the database refused %d late writes", u.LostUpdates, u.Committed, f.FencedRejections)
		if f.FencedRejections == 0 {
			rep.Verdict += " (note: no late write came after a newer holder's, so fencing was not exercised)"
		}
	}
}

// sqliteDSN is a modernc.org/sqlite DSN for the file at path: WAL, writers wait for
// each other (busy_timeout) and take the write lock at BEGIN (_txlock=immediate), so
// concurrent transactions queue instead of failing with SQLITE_BUSY.
func sqliteDSN(path string) string {
	return "file:" + (&url.URL{Path: filepath.ToSlash(path)}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}

// addParam adds name=value to dsn's parameters: after a '?' list (URLs, SQLite file:
// URIs, go-sql-driver/mysql DSNs), or as one more keyword of PostgreSQL's
// keyword/value form.
func addParam(driver, dsn, kv string) string {
	switch {
	case driver == "postgres" && !strings.Contains(dsn, "://"):
		return dsn + " " + kv
	case strings.Contains(dsn, "?"):
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}

// statements is the SQL of one run, for one table and placeholder style.
type statements struct {
	create, seed, drop, balance string
	stamp, read, update         string
}

func newStatements(table string, numbered bool) statements {
	ph := "?"
	if numbered {
		ph = "$1"
	}
	return statements{
		create: "CREATE TABLE " + table + " (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, " +
			"fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed:    "INSERT INTO " + table + " (id, balance) VALUES (1, 0)",
		drop:    "DROP TABLE " + table,
		balance: "SELECT balance FROM " + table + " WHERE id = 1",
		// The stamp: a no-op write that, through the fenced driver, records the
		// holder's token on the row before it reads (see the package comment).
		stamp:  "UPDATE " + table + " SET balance = balance WHERE id = 1",
		read:   "SELECT balance FROM " + table + " WHERE id = 1",
		update: "UPDATE " + table + " SET balance = " + ph + " WHERE id = 1",
	}
}

// counters are one run's tallies, updated by the workers.
type counters struct {
	rounds, committed, fenced, leaseRefusals, leasesLost atomic.Int64
	late, lateCommitted, pauses, partitions, other       atomic.Int64
	releasesUnconfirmed                                  atomic.Int64
	lastToken                                            atomic.Uint64 // greatest token granted
}

// lockKey is the name of the lock every worker takes.
const lockKey = "account:1"

type runner struct {
	cfg      config
	name     string
	db       *sql.DB
	locks    lockService
	q        statements
	key      string
	deadline time.Time
	lg       *logger
	c        counters
	mp       metric.MeterProvider // nil: the lock clients use the global one
	tl       *timeline            // nil: no timeline

	errMu    sync.Mutex
	firstErr error
}

// runOnce creates the table (through the plain driver at adminDSN), runs the workload
// through driverName at dsn, reads the final balance and drops the table. With mp, the
// lock clients and (for the fenced run) the fenced driver record their metrics there;
// with tl, the run's events are recorded for the timeline.
func runOnce(ctx context.Context, cfg config, lg *logger, name string, be backend, driverName, dsn, adminDSN string,
	mp metric.MeterProvider, tl *timeline) (rr runReport, err error) {
	q := newStatements(cfg.Table, be.numbered)
	admin, err := sql.Open(be.raw, adminDSN)
	if err != nil {
		return rr, err
	}
	defer admin.Close()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := admin.PingContext(sctx); err != nil {
		return rr, fmt.Errorf("connecting to the %s database: %w", cfg.Driver, err)
	}
	if _, err := admin.ExecContext(sctx, q.create); err != nil {
		return rr, fmt.Errorf("creating table %s (the drill creates and drops its own table: if one is left over "+
			"from an interrupted run, drop it or choose another -table): %w", cfg.Table, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, derr := admin.ExecContext(dctx, q.drop); derr != nil && err == nil {
			err = fmt.Errorf("dropping table %s: %w", cfg.Table, derr)
		}
	}()
	if _, err := admin.ExecContext(sctx, q.seed); err != nil {
		return rr, fmt.Errorf("seeding table %s: %w", cfg.Table, err)
	}

	var db *sql.DB
	if mp != nil && driverName == be.fenced {
		// The registered name cannot take a MeterProvider: wrap the plain driver with
		// the same dialect and guard, plus the provider.
		db = fencedsql.OpenDB(fencedsql.DSNConnector(be.driver(), adminDSN),
			fencedsql.WithDialect(be.dialect), fencedsql.Guard(cfg.Table), fencedsql.WithMeterProvider(mp))
	} else if db, err = sql.Open(driverName, dsn); err != nil {
		return rr, err
	}
	defer db.Close()
	db.SetMaxOpenConns(cfg.Workers + 2)
	db.SetMaxIdleConns(cfg.Workers + 2)

	lstart := time.Now()
	locks, err := openLocks(ctx, cfg, name)
	if err != nil {
		return rr, fmt.Errorf("lock service %s: %w", cfg.Locks, err)
	}
	if cfg.Locks == locksEtcdEmbedded {
		lg.eventf("[%s] etcd: %d member(s) started in %v", name, cfg.EtcdMembers, time.Since(lstart).Round(time.Millisecond))
	}
	defer func() {
		if cerr := locks.close(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}()

	r := &runner{cfg: cfg, name: name, db: db, locks: locks, q: q, key: lockKey, lg: lg, mp: mp, tl: tl}
	start := time.Now()
	tl.begin(start)
	if cfg.Duration > 0 {
		r.deadline = start.Add(cfg.Duration)
	}
	stopProgress := r.progress(start)
	waitFailover := func() *failoverReport { return nil }
	if fs, ok := locks.(failoverService); ok && cfg.Failover {
		waitFailover = r.scheduleFailover(ctx, fs, start)
	}
	var wg sync.WaitGroup
	for w := range cfg.Workers {
		wg.Go(func() { r.worker(ctx, w) })
	}
	wg.Wait()
	failover := waitFailover()
	stopProgress()
	elapsed := time.Since(start)
	tl.finish(start.Add(elapsed))
	if err := ctx.Err(); err != nil {
		return rr, fmt.Errorf("interrupted: %w", err)
	}

	var final int64
	if err := admin.QueryRowContext(ctx, q.balance).Scan(&final); err != nil {
		return rr, fmt.Errorf("reading the final balance: %w", err)
	}
	rr = runReport{
		Name:                name,
		Bind:                cfg.Bind,
		Driver:              driverName,
		Rounds:              r.c.rounds.Load(),
		Committed:           r.c.committed.Load(),
		FinalBalance:        final,
		FencedRejections:    r.c.fenced.Load(),
		LeaseRefusals:       r.c.leaseRefusals.Load(),
		LeasesLost:          r.c.leasesLost.Load(),
		LateWrites:          r.c.late.Load(),
		LateWritesCommitted: r.c.lateCommitted.Load(),
		Pauses:              r.c.pauses.Load(),
		Partitions:          r.c.partitions.Load(),
		ReleasesUnconfirmed: r.c.releasesUnconfirmed.Load(),
		OtherErrors:         r.c.other.Load(),
		LastToken:           r.lastToken(),
		DurationMS:          elapsed.Milliseconds(),
		Failover:            failover,
	}
	rr.LostUpdates = rr.Committed - rr.FinalBalance
	rr.InvariantHolds = rr.LostUpdates == 0
	if cfg.Failover && failover == nil {
		r.fail(errors.New("the run ended before the scheduled failover"))
		rr.OtherErrors = r.c.other.Load()
	}
	if r.firstErr != nil {
		rr.FirstError = r.firstErr.Error()
	}
	lg.eventf("[%s] done in %v: %d committed, final balance %d, %d lost, %d fenced", name,
		elapsed.Round(time.Millisecond), rr.Committed, rr.FinalBalance, rr.LostUpdates, rr.FencedRejections)
	return rr, nil
}

// faultKind is what happens to a holder between its read and its write.
type faultKind uint8

const (
	faultNone      faultKind = iota
	faultPause               // the process stalls: its lock requests are held, it sleeps
	faultPartition           // it is cut off from the lock service while its work drags on
)

// step is one round's schedule.
type step struct {
	work  time.Duration
	fault faultKind
	hold  time.Duration // how long the fault lasts
}

// nextStep draws one round's schedule. It always draws the same number of values, so
// a worker's schedule depends only on the seed and the worker's number.
func (c *config) nextStep(rng *rand.Rand) step {
	s := step{work: time.Duration(float64(c.Work) * (0.5 + rng.Float64()))}
	u := rng.Float64()
	hold := time.Duration(float64(c.TTL)*(1.5+1.5*rng.Float64())) + c.serviceLag()
	switch {
	case u < c.PauseProb:
		s.fault, s.hold = faultPause, hold
	case u < c.PauseProb+c.PartitionProb:
		s.fault, s.hold = faultPartition, hold
	}
	return s
}

// lastToken is the last fencing token the lock service issued, or the greatest one a
// worker was granted when the service cannot tell.
func (r *runner) lastToken() uint64 {
	if t := r.locks.lastToken(); t != 0 {
		return t
	}
	return r.c.lastToken.Load()
}

func (r *runner) worker(ctx context.Context, w int) {
	owner := fmt.Sprintf("worker-%d", w)
	wl, err := r.locks.worker(w, owner)
	if err != nil {
		r.fail(fmt.Errorf("%s: connecting to the lock service: %w", owner, err))
		return
	}
	defer wl.close() // after the client's Close below
	opts := []lockclient.Option{lockclient.WithTTL(r.cfg.TTL), lockclient.WithOwner(owner)}
	if r.mp != nil {
		opts = append(opts, lockclient.WithMeterProvider(r.mp))
	}
	cl := lockclient.New(wl.backend, opts...)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = cl.Close(cctx)
	}()
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(w)))
	for i := 0; r.cfg.Rounds == 0 || i < r.cfg.Rounds; i++ {
		if ctx.Err() != nil || (!r.deadline.IsZero() && !time.Now().Before(r.deadline)) {
			return
		}
		r.round(ctx, cl, wl.faults, w, owner, r.cfg.nextStep(rng))
	}
}

// round is one lease: stamp and read, work, (fault), write, release.
func (r *runner) round(ctx context.Context, cl *lockclient.Client, flt faults, w int, owner string, st step) {
	lease, err := cl.Acquire(ctx, r.key)
	if err != nil {
		if ctx.Err() == nil {
			r.fail(fmt.Errorf("%s: acquire: %w", owner, err))
		}
		return
	}
	r.c.rounds.Add(1)
	tok := lease.Token()
	for {
		last := r.c.lastToken.Load()
		if tok <= last || r.c.lastToken.CompareAndSwap(last, tok) {
			break
		}
	}
	var lostAt chan time.Time
	if r.tl != nil {
		r.tl.add(time.Now(), w, evGrant, tok, false)
		// When the lease ends (lost, or released), for the timeline's bar.
		lostAt = make(chan time.Time, 1)
		go func() {
			<-lease.Lost()
			lostAt <- time.Now()
		}()
	}
	defer r.release(ctx, lease, w, lostAt)
	bctx := fencedsql.WithToken(ctx, tok)
	if r.cfg.Bind == "lease" {
		bctx = fencedsql.WithLease(ctx, lease)
	}

	bal, err := r.read(bctx)
	if err != nil {
		if ctx.Err() == nil {
			r.fail(fmt.Errorf("%s: read with token %d: %w", owner, tok, err))
		}
		return
	}
	if !sleep(ctx, st.work) {
		return
	}
	late := st.fault != faultNone
	if late {
		r.inject(ctx, flt, w, owner, tok, bal, st)
		if ctx.Err() != nil {
			return
		}
		r.c.late.Add(1)
	}

	// The write. A late writer goes ahead exactly like a punctual one: it does not
	// look at lease.Lost() first.
	err = r.write(bctx, bal+1)
	now := time.Now()
	switch {
	case err == nil:
		r.c.committed.Add(1)
		r.tl.add(now, w, evCommit, tok, late)
		if late {
			r.c.lateCommitted.Add(1)
			r.lg.eventf("[%s] %s late write balance=%d with token %d (newest token issued: %d): committed",
				r.name, owner, bal+1, tok, r.lastToken())
		}
	case errors.Is(err, fencedsql.ErrFenced):
		r.c.fenced.Add(1)
		r.tl.add(now, w, evRejected, tok, late)
		r.lg.eventf("[%s] %s late write balance=%d with token %d (newest token issued: %d): refused by the database (ErrFenced)",
			r.name, owner, bal+1, tok, r.lastToken())
	case errors.Is(err, lockclient.ErrLeaseLost):
		r.c.leaseRefusals.Add(1)
		r.tl.add(now, w, evRefused, tok, late)
		r.lg.eventf("[%s] %s late write balance=%d with token %d: Commit refused, lease lost (ErrLeaseLost)",
			r.name, owner, bal+1, tok)
	default:
		if ctx.Err() == nil {
			r.fail(fmt.Errorf("%s: write with token %d: %w", owner, tok, err))
		}
	}
}

// inject applies a fault between the read and the write.
func (r *runner) inject(ctx context.Context, flt faults, w int, owner string, tok uint64, bal int64, st step) {
	if r.tl != nil {
		kind := evPauseStart
		if st.fault == faultPartition {
			kind = evPartitionStart
		}
		r.tl.add(time.Now(), w, kind, tok, false)
		defer func() { r.tl.add(time.Now(), w, evFaultEnd, tok, false) }()
	}
	switch st.fault {
	case faultPause:
		r.c.pauses.Add(1)
		r.lg.eventf("[%s] %s read balance %d with token %d, then pauses %v (TTL %v)",
			r.name, owner, bal, tok, st.hold.Round(time.Millisecond), r.cfg.TTL)
		flt.pause()
		defer flt.resume()
	case faultPartition:
		r.c.partitions.Add(1)
		r.lg.eventf("[%s] %s read balance %d with token %d, then is cut off from the lock service for %v (TTL %v)",
			r.name, owner, bal, tok, st.hold.Round(time.Millisecond), r.cfg.TTL)
		flt.partition()
		defer flt.heal()
	}
	sleep(ctx, st.hold)
}

// read stamps the row with the transaction's token and reads the balance, in one
// transaction.
func (r *runner) read(ctx context.Context) (int64, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	if _, err := tx.ExecContext(ctx, r.q.stamp); err != nil {
		return 0, err
	}
	var bal int64
	if err := tx.QueryRowContext(ctx, r.q.read).Scan(&bal); err != nil {
		return 0, err
	}
	return bal, tx.Commit()
}

// write stores the new balance in a transaction bound to ctx's token or lease.
func (r *runner) write(ctx context.Context, bal int64) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	if _, err := tx.ExecContext(ctx, r.q.update, bal); err != nil {
		return err
	}
	return tx.Commit()
}

// release releases lease and counts it as lost if the client or the service says so.
// lostAt (timeline only) delivers the moment the lease's Lost channel closed.
func (r *runner) release(ctx context.Context, lease *lockclient.Lease, w int, lostAt <-chan time.Time) {
	lostBefore := lease.Err() != nil
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := lease.Release(rctx)
	lost := lostBefore || errors.Is(err, lockclient.ErrLeaseLost) || errors.Is(err, lockclient.ErrNotOwner)
	switch {
	case lost:
		r.c.leasesLost.Add(1)
	case errors.Is(err, lockclient.ErrUnavailable) && ctx.Err() == nil:
		// The service could not be reached (a failover, a reset connection): the lock
		// stays held until its lease expires there. Not an error of the drill.
		r.c.releasesUnconfirmed.Add(1)
		r.lg.eventf("[%s] release of token %d unconfirmed: %v", r.name, lease.Token(), err)
	case err != nil && ctx.Err() == nil:
		r.fail(fmt.Errorf("release token %d: %w", lease.Token(), err))
	}
	if lostAt != nil {
		end := <-lostAt // closed by now: lost earlier, or by this Release
		switch {
		case lostBefore:
			r.tl.add(end, w, evLost, lease.Token(), false)
		case lost:
			// The client had not noticed; the service had already expired the lease.
			r.tl.add(time.Now(), w, evLost, lease.Token(), false)
		default:
			r.tl.add(end, w, evRelease, lease.Token(), false)
		}
	}
}

func (r *runner) fail(err error) {
	r.c.other.Add(1)
	r.errMu.Lock()
	if r.firstErr == nil {
		r.firstErr = err
	}
	r.errMu.Unlock()
	r.lg.eventf("[%s] error: %v", r.name, err)
}

// progress reports the run's progress on the log until the returned function is called.
func (r *runner) progress(start time.Time) (stop func()) {
	if !r.lg.live && !r.lg.verbose {
		return func() {}
	}
	every := time.Second
	if r.lg.live {
		every = 200 * time.Millisecond
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				r.lg.clearLive()
				return
			case <-t.C:
				total := "?"
				if r.cfg.Rounds > 0 {
					total = fmt.Sprint(r.cfg.Rounds * r.cfg.Workers)
				}
				r.lg.progressf("[%s] %v: %d/%s rounds, %d committed, %d faults, %d fenced",
					r.name, time.Since(start).Round(100*time.Millisecond), r.c.rounds.Load(), total,
					r.c.committed.Load(), r.c.pauses.Load()+r.c.partitions.Load(), r.c.fenced.Load())
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// logger serialises progress and event output.
type logger struct {
	mu      sync.Mutex
	w       io.Writer
	verbose bool // events and progress lines
	live    bool // one self-updating progress line (terminal)
	shown   bool // a live line is on screen
}

func (l *logger) eventf(format string, args ...any) {
	if !l.verbose {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

func (l *logger) progressf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live {
		fmt.Fprintf(l.w, "\r\033[K"+format, args...)
		l.shown = true
		return
	}
	fmt.Fprintf(l.w, format+"\n", args...)
}

func (l *logger) clearLive() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\033[K")
		l.shown = false
	}
}

// sleep waits d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
