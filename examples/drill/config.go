package main

import (
	"errors"
	"fmt"
	"io"
	"time"
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
	Failover      bool          // etcd-embedded: kill the leader during each run
	Failovers     int           // with Failover: leader kills per run, evenly spread (default 1)
	Workers       int           // concurrent workers, each its own lock client
	Rounds        int           // rounds per worker and run; 0: until Duration
	Duration      time.Duration // stop starting rounds after this long; 0: no limit
	TTL           time.Duration // lease time-to-live
	Work          time.Duration // mean simulated work between read and write
	PauseProb     float64       // per round: pause between read and write
	PartitionProb float64       // per round: cut off from the lock service between read and write
	Seed          uint64        // seed of the fault schedule
	Bind          string        // "token" (fencedsql.WithToken) or "lease" (fencedsql.WithLease)

	// Process mode (see procmode.go).
	Procs      int           // worker processes; 0: workers are goroutines of this process
	Accounts   int           // accounts (rows, each its own lock); process mode
	FaultEvery time.Duration // process mode: mean interval between the coordinator's faults
	Mutate     string        // process mode: "lost-update" plants one after the fenced run (checker's mutation test)
	Workload   string        // process mode: "increment" (one lock, balance+1) or "transfer" (two locks, see transfer.go)

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
		Accounts:      1,
		Workload:      workloadIncrement,
	}
}

func (c *config) validate() error {
	driver, ok := driverAliases[c.Driver]
	if !ok {
		return fmt.Errorf("-driver %q: want sqlite, postgres or mysql", c.Driver)
	}
	c.Driver = driver
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
	return c.validateProcs()
}

// validateProcs checks the settings of process mode.
func (c *config) validateProcs() error {
	if c.Workload == "" {
		c.Workload = workloadIncrement
	}
	switch {
	case c.Workload != workloadIncrement && c.Workload != workloadTransfer:
		return fmt.Errorf("-workload %q: want %s or %s", c.Workload, workloadIncrement, workloadTransfer)
	case c.Procs == 0 && (c.Accounts != 1 || c.FaultEvery != 0 || c.Mutate != "" || c.Workload != workloadIncrement):
		return errors.New("-accounts, -fault-every, -mutate and -workload are for process mode (-procs N)")
	case c.Procs == 0:
		return nil
	case c.Procs < 2 || c.Procs > 64:
		return fmt.Errorf("-procs %d: want 2 to 64 worker processes", c.Procs)
	case c.Accounts < 1 || c.Accounts > 10000:
		return fmt.Errorf("-accounts %d: want 1 to 10000", c.Accounts)
	case c.FaultEvery < 0:
		return fmt.Errorf("-fault-every %v: want >= 0", c.FaultEvery)
	case c.Mutate != "" && c.Mutate != mutateLostUpdate:
		return fmt.Errorf("-mutate %q: want %s", c.Mutate, mutateLostUpdate)
	case c.Mutate != "" && c.Workload == workloadTransfer:
		return errors.New("-mutate is for -workload increment (the transfer checker's mutations are unit-tested)")
	case c.Workload == workloadTransfer && c.Accounts < 2:
		return fmt.Errorf("-workload transfer with -accounts %d: want at least 2 (a transfer moves money between two)", c.Accounts)
	case c.Locks != locksMem && c.Locks != locksEtcd && c.Locks != locksEtcdEmbedded:
		return fmt.Errorf("-procs with -locks %s: process mode supports mem (served by the coordinator), etcd-embedded and etcd", c.Locks)
	case c.MetricsAddr != "":
		return errors.New("-metrics is not available with -procs (the metrics live in the worker processes)")
	case !procsSupported:
		return errNoProcs
	}
	c.Workers = c.Procs
	return nil
}

// validateLocks checks the lock service's settings.
func (c *config) validateLocks() error {
	locks, ok := locksAliases[c.Locks]
	if !ok {
		return fmt.Errorf("-locks %q: want mem, etcd, etcd-embedded, redis or sql", c.Locks)
	}
	c.Locks = locks
	switch {
	case c.LockEndpoints != "" && locks != locksEtcd && locks != locksRedis:
		return fmt.Errorf("-lock-endpoints is for -locks etcd or redis, not %s", locks)
	case c.LockDSN != "" && locks != locksSQL:
		return fmt.Errorf("-lock-dsn is for -locks sql, not %s", locks)
	case c.LockPrefix != "" && locks != locksEtcd && locks != locksEtcdEmbedded && locks != locksRedis:
		return fmt.Errorf("-lock-prefix is for -locks etcd, etcd-embedded or redis, not %s", locks)
	case locks == locksEtcdEmbedded && (c.EtcdMembers < 1 || c.EtcdMembers > 7):
		return fmt.Errorf("-etcd-members %d: want 1 to 7 (3 to survive a failover)", c.EtcdMembers)
	case c.Failovers < 0 || c.Failovers > 0 && !c.Failover:
		return fmt.Errorf("-failovers %d: want a positive number, with -failover", c.Failovers)
	case c.Failover && (locks != locksEtcdEmbedded || c.EtcdMembers < 3):
		return errors.New("-failover needs -locks etcd-embedded with -etcd-members 3 (or more): " +
			"a cluster that keeps a majority when its leader is killed")
	case (locks == locksEtcd || locks == locksEtcdEmbedded) && c.TTL < time.Second:
		return fmt.Errorf("-ttl %v: etcd lease TTLs are whole seconds: want at least 1s with -locks %s", c.TTL, locks)
	case locks == locksSQL && len(lockTable(c.Table)) > 48:
		return fmt.Errorf("-table %q: too long for the lease table name %s (at most 48 characters)", c.Table, lockTable(c.Table))
	}
	switch locks {
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
		c.nonce = randomPrefix(locks)
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
