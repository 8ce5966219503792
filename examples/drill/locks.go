package main

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// The lock services of -locks.
const (
	locksMem          = "mem"
	locksEtcd         = "etcd"
	locksEtcdEmbedded = "etcd-embedded"
	locksRedis        = "redis"
	locksSQL          = "sql"
)

var locksAliases = map[string]string{
	"mem": locksMem, "memlock": locksMem, "memory": locksMem,
	"etcd": locksEtcd, "etcdlock": locksEtcd,
	"etcd-embedded": locksEtcdEmbedded, "embedded-etcd": locksEtcdEmbedded,
	"redis": locksRedis, "redislock": locksRedis,
	"sql": locksSQL, "sqllock": locksSQL,
}

// networked reports whether the lock service is reached over TCP (every one but mem):
// then each worker's lock client talks to it through a loopback proxy of its own, which
// the faults cut.
func networked(locks string) bool { return locks != locksMem }

// defaultTTL is the lease TTL of a lock service when -ttl is not given. etcd lease TTLs
// are whole seconds, 1s at least (etcdlock rounds up); Redis and the SQL lease table
// judge expiry to the millisecond, but a round trip through the network and the proxy
// deserves a little more slack than the in-process service.
func defaultTTL(locks string) time.Duration {
	switch locks {
	case locksEtcd, locksEtcdEmbedded:
		return time.Second
	case locksRedis, locksSQL:
		return 500 * time.Millisecond
	}
	return 300 * time.Millisecond
}

// defaultRounds is the rounds per worker of a lock service when -rounds is not given:
// every fault stalls the other workers until the lease expires at the service, so a
// longer TTL gets fewer rounds, to keep a drill well under a minute.
func defaultRounds(locks string) int {
	switch locks {
	case locksEtcd, locksEtcdEmbedded:
		return 10
	}
	return 40
}

// serviceLag is how much longer than the TTL a lock service may keep a lease after its
// last renewal. A fault lasts 1.5 to 3 TTLs more than that, so that the lease really
// expires at the service and another worker takes the lock before the late write.
//
// etcdlock grants the session lease TTL + etcdlock.DefaultLeaseSlack, rounded up to
// whole seconds, and etcd's lessor looks for expired leases every 500ms; the others
// expire a lease TTL after its last renewal.
func (c *config) serviceLag() time.Duration {
	switch c.Locks {
	case locksEtcd, locksEtcdEmbedded:
		lease := (c.TTL + etcdlock.DefaultLeaseSlack + time.Second - 1).Truncate(time.Second)
		return lease - c.TTL + 500*time.Millisecond
	}
	return 0
}

// lockService is the lock service of one run.
type lockService interface {
	// worker connects worker w, named owner, to the service: the backend of its lock
	// client and the faults that cut it off. Call done.close after the lock client's
	// Close.
	worker(w int, owner string) (workerLocks, error)
	// lastToken returns the last fencing token the service issued, 0 if it cannot tell.
	lastToken() uint64
	// close frees the service's resources once every worker is done.
	close(ctx context.Context) error
}

// failoverService is a lock service that can lose its leader (etcd-embedded, 3 members).
type failoverService interface {
	// killLeader kills the current leader and returns its name.
	killLeader(ctx context.Context) (string, error)
	// waitLeader waits for a leader and returns its name.
	waitLeader(ctx context.Context) (string, error)
}

// workerLocks is one worker's connection to the lock service.
type workerLocks struct {
	backend lockclient.Backend
	faults  faults
	close   func()
}

// faults cut one worker off from the lock service.
type faults interface {
	pause()     // hold its requests (renewals too), to be delivered late by resume
	resume()    // deliver them
	partition() // black-hole its requests
	heal()      // end the partition: requests still held are dropped
}

// openLocks starts (etcd-embedded) or connects to the lock service of one run named
// name: a fresh memlock, a fresh etcd cluster, or a run-specific key prefix or lease
// table on an external service.
func openLocks(ctx context.Context, cfg config, name string) (lockService, error) {
	switch cfg.Locks {
	case locksEtcd:
		eps, err := etcdEndpoints(cfg.LockEndpoints)
		if err != nil {
			return nil, err
		}
		return &etcdLocks{targets: eps, prefix: cfg.lockPrefix(name)}, nil
	case locksEtcdEmbedded:
		c, err := startEtcd(ctx, cfg.EtcdMembers)
		if err != nil {
			return nil, err
		}
		return &etcdLocks{targets: c.endpoints(), prefix: cfg.lockPrefix(name), cluster: c}, nil
	case locksRedis:
		return openRedisLocks(ctx, cfg, name)
	case locksSQL:
		return openSQLLocks(ctx, cfg, name)
	}
	return memLocks{memlock.New()}, nil
}

// lockPrefix is the key prefix of run name's locks on etcd or Redis.
func (c *config) lockPrefix(name string) string {
	p := c.LockPrefix
	if p == "" {
		p = c.nonce
	}
	if c.Locks == locksRedis {
		return p + name + ":"
	}
	return p + name + "/"
}

// randomPrefix is the default -lock-prefix: one per drill, so that drills sharing a
// service never see each other's locks.
func randomPrefix(locks string) string {
	var b [6]byte
	_, _ = crand.Read(b[:])
	if locks == locksRedis {
		return "fencedsql-drill:" + hex.EncodeToString(b[:]) + ":"
	}
	return "/fencedsql-drill/" + hex.EncodeToString(b[:]) + "/"
}

// ---- mem

// memLocks is the in-process service, whose own Pause/Partition make the faults.
type memLocks struct{ svc *memlock.Service }

func (m memLocks) worker(_ int, owner string) (workerLocks, error) {
	return workerLocks{backend: m.svc, faults: memFaults{m.svc, owner}, close: func() {}}, nil
}
func (m memLocks) lastToken() uint64           { return m.svc.LastToken() }
func (m memLocks) close(context.Context) error { return nil }

type memFaults struct {
	svc   *memlock.Service
	owner string
}

func (f memFaults) pause()     { f.svc.Pause(f.owner) }
func (f memFaults) resume()    { f.svc.Resume(f.owner) }
func (f memFaults) partition() { f.svc.Partition(f.owner) }
func (f memFaults) heal()      { f.svc.Heal(f.owner) }

// ---- proxies

// proxies are one worker's loopback proxies to the lock service (one per etcd member).
// A pause blocks them, so the requests wait in the proxy and are delivered when the
// pause ends; a partition blocks them too, and its end resets every connection before
// unblocking, so the requests that were held are lost and the client reconnects.
type proxies []*netproxy.Proxy

func newProxies(targets []string) (proxies, error) {
	var ps proxies
	for _, t := range targets {
		p, err := netproxy.New(t)
		if err != nil {
			ps.close()
			return nil, fmt.Errorf("proxy to the lock service at %s: %w", t, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func (ps proxies) addrs() []string {
	a := make([]string, len(ps))
	for i, p := range ps {
		a[i] = p.Addr()
	}
	return a
}

func (ps proxies) pause() {
	for _, p := range ps {
		p.Block()
	}
}

func (ps proxies) resume() {
	for _, p := range ps {
		p.Unblock()
	}
}

func (ps proxies) partition() { ps.pause() }

func (ps proxies) heal() {
	for _, p := range ps {
		p.Reset()
		p.Unblock()
	}
}

func (ps proxies) close() {
	for _, p := range ps {
		p.Close()
	}
}

// ---- etcd

// etcdRequestTimeout bounds each etcd request of the workers' backends
// (etcdlock.WithRequestTimeout), so that a request through a cut proxy fails in time.
const etcdRequestTimeout = 2 * time.Second

// etcdLocks is an etcd cluster: external (-locks etcd) or embedded in the process.
type etcdLocks struct {
	targets []string     // client host:port of every member
	prefix  string       // key prefix of this run's locks
	cluster *etcdCluster // etcd-embedded; nil for an external cluster
}

// etcdEndpoints parses -lock-endpoints for etcd: comma-separated http:// client URLs or
// host:port addresses.
func etcdEndpoints(s string) ([]string, error) {
	var eps []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if strings.Contains(e, "://") {
			u, err := url.Parse(e)
			switch {
			case err != nil:
				return nil, fmt.Errorf("-lock-endpoints %q: %w", e, err)
			case u.Scheme != "http":
				return nil, fmt.Errorf("-lock-endpoints %q: only plain http:// etcd endpoints (the drill puts a TCP proxy in front of each and does not speak TLS)", e)
			}
			e = u.Host
		}
		if _, _, err := net.SplitHostPort(e); err != nil {
			return nil, fmt.Errorf("-lock-endpoints %q: want host:port or http://host:port", e)
		}
		eps = append(eps, e)
	}
	if len(eps) == 0 {
		return nil, errors.New("-locks etcd needs -lock-endpoints (comma-separated client URLs)")
	}
	return eps, nil
}

func (e *etcdLocks) worker(_ int, _ string) (workerLocks, error) {
	ps, err := newProxies(e.targets)
	if err != nil {
		return workerLocks{}, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   ps.addrs(),
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		ps.close()
		return workerLocks{}, fmt.Errorf("etcd client: %w", err)
	}
	be := etcdlock.New(cli, etcdlock.WithPrefix(e.prefix), etcdlock.WithRequestTimeout(etcdRequestTimeout))
	return workerLocks{backend: be, faults: ps, close: func() {
		cli.Close()
		ps.close()
	}}, nil
}

func (e *etcdLocks) lastToken() uint64 { return 0 }

func (e *etcdLocks) close(context.Context) error {
	if e.cluster != nil {
		e.cluster.close()
	}
	return nil
}

func (e *etcdLocks) killLeader(ctx context.Context) (string, error) {
	if e.cluster == nil || len(e.cluster.Members) < 3 {
		return "", errors.New("failover needs an embedded etcd cluster of 3 or more members")
	}
	i, err := e.cluster.waitLeader(ctx)
	if err != nil {
		return "", err
	}
	e.cluster.kill(i)
	return e.cluster.Members[i].Name, nil
}

func (e *etcdLocks) waitLeader(ctx context.Context) (string, error) {
	i, err := e.cluster.waitLeader(ctx)
	if err != nil {
		return "", err
	}
	return e.cluster.Members[i].Name, nil
}

// ---- redis

// redisLocks is a Redis server; each run has its own key prefix (and so its own token
// counter), deleted at the end.
type redisLocks struct {
	opts   redis.Options // of the server; Addr is replaced by each worker's proxy
	prefix string
	admin  *redis.Client // direct, for the clean-up
}

// redisOptions parses -lock-endpoints for Redis: host:port or a redis:// URL.
func redisOptions(s string) (*redis.Options, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("-locks redis needs -lock-endpoints (host:port or redis:// URL)")
	}
	if strings.Contains(s, "://") {
		o, err := redis.ParseURL(s)
		if err != nil {
			return nil, fmt.Errorf("-lock-endpoints: %w", err)
		}
		if o.TLSConfig != nil {
			return nil, errors.New("-lock-endpoints: rediss:// (TLS) is not supported: the drill puts a TCP proxy in front of the server")
		}
		return o, nil
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		return nil, fmt.Errorf("-lock-endpoints %q: want host:port or a redis:// URL", s)
	}
	return &redis.Options{Addr: s}, nil
}

func openRedisLocks(ctx context.Context, cfg config, name string) (lockService, error) {
	o, err := redisOptions(cfg.LockEndpoints)
	if err != nil {
		return nil, err
	}
	r := &redisLocks{opts: *o, prefix: cfg.lockPrefix(name)}
	r.opts.MaxRetries = -1
	r.opts.DialTimeout = 500 * time.Millisecond
	r.opts.ReadTimeout = 2 * time.Second
	r.opts.WriteTimeout = 2 * time.Second
	r.opts.ContextTimeoutEnabled = true
	r.opts.PoolSize = 4
	admin := r.opts
	r.admin = redis.NewClient(&admin)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.admin.Ping(pctx).Err(); err != nil {
		r.admin.Close()
		return nil, fmt.Errorf("connecting to Redis at %s: %w", o.Addr, err)
	}
	return r, nil
}

func (r *redisLocks) worker(_ int, _ string) (workerLocks, error) {
	ps, err := newProxies([]string{r.opts.Addr})
	if err != nil {
		return workerLocks{}, err
	}
	o := r.opts
	o.Addr = ps[0].Addr()
	rdb := redis.NewClient(&o)
	return workerLocks{backend: redislock.New(rdb, redislock.WithPrefix(r.prefix)), faults: ps, close: func() {
		rdb.Close()
		ps.close()
	}}, nil
}

func (r *redisLocks) lastToken() uint64 { return 0 }

// close deletes the run's keys: the token counter (and a lock left by a release whose
// outcome was unknown).
func (r *redisLocks) close(ctx context.Context) error {
	defer r.admin.Close()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	b := redislock.New(r.admin, redislock.WithPrefix(r.prefix))
	if err := r.admin.Del(dctx, b.TokenKey(), b.LockKey(lockKey)).Err(); err != nil {
		return fmt.Errorf("deleting the Redis keys %s*: %w", r.prefix, err)
	}
	return nil
}

// ---- sql

// sqlLocks is a lease table (sqllock) in a PostgreSQL or MySQL/MariaDB database: the
// drill's own database, or -lock-dsn's. Each run creates the table <table>_locks (and
// the token sequence, counter table or procedure next to it) and drops it at the end.
type sqlLocks struct {
	driver  string // "pgx" or "mysql"
	dialect sqllock.Dialect
	dsn     string
	target  string // host:port of the server
	table   string
	admin   *sql.DB // direct, for the DDL
}

// lockDSN returns the DSN of the database that holds the lease table, and its driver.
func (c *config) lockDSN() (dsn, driver string, err error) {
	if c.LockDSN == "" {
		switch c.Driver {
		case "postgres":
			return c.DSN, "pgx", nil
		case "mysql":
			return c.DSN, "mysql", nil
		}
		return "", "", errors.New("-locks sql keeps its lease table in a PostgreSQL or MySQL/MariaDB database: " +
			"use -driver postgres or mysql, or give -lock-dsn")
	}
	d := c.LockDSN
	switch {
	case strings.HasPrefix(d, "postgres://"), strings.HasPrefix(d, "postgresql://"):
		return d, "pgx", nil
	case strings.Contains(d, "@tcp("), strings.Contains(d, "@unix("), strings.Contains(d, "@/"):
		return d, "mysql", nil
	case strings.Contains(d, "="):
		return d, "pgx", nil // PostgreSQL keyword/value
	}
	return "", "", fmt.Errorf("-lock-dsn: want a pgx URL (postgres://...), PostgreSQL keyword/value DSN or go-sql-driver/mysql DSN (user:pass@tcp(host:port)/db)")
}

// lockTable is the lease table's name for -table t.
func lockTable(t string) string { return t + "_locks" }

func openSQLLocks(ctx context.Context, cfg config, name string) (lockService, error) {
	dsn, driver, err := cfg.lockDSN()
	if err != nil {
		return nil, err
	}
	s := &sqlLocks{driver: driver, dialect: sqllock.Postgres, dsn: dsn, table: lockTable(cfg.Table)}
	if driver == "mysql" {
		s.dialect = sqllock.MySQL
	}
	if s.target, err = sqlTarget(driver, dsn); err != nil {
		return nil, err
	}
	if s.admin, err = sql.Open(driver, dsn); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.admin.PingContext(sctx); err != nil {
		s.admin.Close()
		return nil, fmt.Errorf("connecting to the lease table's database: %w", err)
	}
	if err := sqllock.CreateTable(sctx, s.admin, s.dialect, s.table); err != nil {
		s.admin.Close()
		return nil, fmt.Errorf("creating the lease table %s: %w", s.table, err)
	}
	return s, nil
}

// sqlTarget returns the host:port that dsn connects to; the proxies forward there.
func sqlTarget(driver, dsn string) (string, error) {
	if driver == "pgx" {
		pc, err := pgx.ParseConfig(dsn)
		if err != nil {
			return "", fmt.Errorf("lease table DSN: %w", err)
		}
		if strings.HasPrefix(pc.Host, "/") {
			return "", errors.New("lease table DSN: the drill needs a TCP connection (host:port), not a Unix socket, to cut it")
		}
		return net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))), nil
	}
	mc, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("lease table DSN: %w", err)
	}
	if mc.Net != "tcp" {
		return "", errors.New("lease table DSN: the drill needs a TCP connection (tcp(host:port)), not a Unix socket, to cut it")
	}
	return mc.Addr, nil
}

// via returns the DSN with its server address replaced by addr (a proxy).
func (s *sqlLocks) via(addr string) (string, error) {
	if s.driver == "mysql" {
		mc, err := gomysql.ParseDSN(s.dsn)
		if err != nil {
			return "", err
		}
		mc.Addr = addr
		mc.Timeout = 2 * time.Second
		return mc.FormatDSN(), nil
	}
	if strings.HasPrefix(s.dsn, "postgres://") || strings.HasPrefix(s.dsn, "postgresql://") {
		u, err := url.Parse(s.dsn)
		if err != nil {
			return "", err
		}
		u.Host = addr
		q := u.Query()
		q.Set("connect_timeout", "2")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	host, port, _ := net.SplitHostPort(addr)
	return s.dsn + " host=" + host + " port=" + port + " connect_timeout=2", nil // keyword/value: later wins
}

func (s *sqlLocks) worker(_ int, _ string) (workerLocks, error) {
	ps, err := newProxies([]string{s.target})
	if err != nil {
		return workerLocks{}, err
	}
	dsn, err := s.via(ps[0].Addr())
	if err != nil {
		ps.close()
		return workerLocks{}, err
	}
	db, err := sql.Open(s.driver, dsn)
	if err != nil {
		ps.close()
		return workerLocks{}, err
	}
	// A worker holds one lease at a time: its grant or release, a renewal and (PostgreSQL)
	// the LISTEN connection of Wait.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	be, err := sqllock.New(db, sqllock.WithDialect(s.dialect), sqllock.WithTable(s.table))
	if err != nil {
		db.Close()
		ps.close()
		return workerLocks{}, err
	}
	return workerLocks{backend: be, faults: ps, close: func() {
		db.Close()
		ps.close()
	}}, nil
}

func (s *sqlLocks) lastToken() uint64 { return 0 }

// close drops the lease table and what CreateTable made next to it.
func (s *sqlLocks) close(ctx context.Context) error {
	defer s.admin.Close()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var stmts []string
	if s.dialect == sqllock.MySQL {
		q := func(n string) string { return "`" + n + "`" }
		stmts = []string{
			"DROP PROCEDURE IF EXISTS " + q(s.table+"_grant_v1"),
			"DROP TABLE IF EXISTS " + q(s.table+"_token"),
			"DROP TABLE IF EXISTS " + q(s.table),
		}
	} else {
		q := func(n string) string { return `"` + n + `"` }
		stmts = []string{
			"DROP TABLE IF EXISTS " + q(s.table),
			"DROP SEQUENCE IF EXISTS " + q(s.table+"_token_seq"),
		}
	}
	var errs []error
	for _, st := range stmts {
		if _, err := s.admin.ExecContext(dctx, st); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dropping the lease table %s: %w", s.table, err)
	}
	return nil
}

// ---- failover

// failoverReport is what the scheduled failover did (etcd-embedded -failover).
type failoverReport struct {
	Killed         string `json:"killed"`           // the leader that was killed
	AtMS           int64  `json:"at_ms"`            // since the run's start
	RoundsBefore   int64  `json:"rounds_before"`    // leases granted before it
	NewLeader      string `json:"new_leader"`       // "" if none was elected
	ElectedAfterMS int64  `json:"elected_after_ms"` // from the kill to the new leader
	Error          string `json:"error,omitempty"`
}

// scheduleFailover kills the leader of svc once half of the run is done: half of its
// rounds (or of -duration). The returned function waits for it and reports what
// happened; nil if the run ended first.
func (r *runner) scheduleFailover(ctx context.Context, svc failoverService, start time.Time) (wait func() *failoverReport) {
	done := make(chan struct{})
	var (
		wg  sync.WaitGroup
		rep *failoverReport
	)
	total := int64(r.cfg.Rounds * r.cfg.Workers)
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				n := r.c.rounds.Load()
				if (total > 0 && n < (total+1)/2) || (total == 0 && now.Sub(start) < r.cfg.Duration/2) {
					continue
				}
				rep = &failoverReport{RoundsBefore: n}
				kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				killed, err := svc.killLeader(kctx)
				at := time.Now()
				rep.AtMS = at.Sub(start).Milliseconds()
				if err != nil {
					rep.Error = err.Error()
					r.fail(fmt.Errorf("failover: %w", err))
					return
				}
				rep.Killed = killed
				r.lg.eventf("[%s] failover: killed the etcd leader %s after %d rounds", r.name, killed, n)
				lead, err := svc.waitLeader(kctx)
				if err != nil {
					rep.Error = err.Error()
					r.fail(fmt.Errorf("failover: after killing %s: %w", killed, err))
					return
				}
				rep.NewLeader, rep.ElectedAfterMS = lead, time.Since(at).Milliseconds()
				r.lg.eventf("[%s] failover: %s is the new leader, %v after the kill", r.name, lead,
					time.Since(at).Round(time.Millisecond))
				return
			}
		}
	})
	return func() *failoverReport {
		close(done)
		wg.Wait()
		return rep
	}
}
