package main

import (
	"context"
	"database/sql"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestLockServiceDefaults: each lock service has its own -ttl and -rounds defaults, and
// explicit flags win.
func TestLockServiceDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		ttl     time.Duration
		rounds  int
		members int
	}{
		{nil, 300 * time.Millisecond, 40, 1},
		{[]string{"-locks", "etcd-embedded"}, time.Second, 10, 1},
		{[]string{"-locks", "etcd-embedded", "-failover"}, time.Second, 10, 3},
		{[]string{"-locks", "etcd-embedded", "-failover", "-etcd-members", "5", "-ttl", "2s", "-rounds", "7"}, 2 * time.Second, 7, 5},
		{[]string{"-locks", "etcd", "-lock-endpoints", "http://127.0.0.1:2379,127.0.0.1:2381"}, time.Second, 10, 1},
		{[]string{"-locks", "redis", "-lock-endpoints", "127.0.0.1:6379"}, 500 * time.Millisecond, 40, 1},
		{[]string{"-locks", "sqllock", "-driver", "postgres", "-dsn", "postgres://u@h/db"}, 500 * time.Millisecond, 40, 1},
		{[]string{"-locks", "redis", "-lock-endpoints", "127.0.0.1:6379", "-duration", "5s"}, 500 * time.Millisecond, 0, 1},
	} {
		cfg, _, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if cfg.TTL != tc.ttl || cfg.Rounds != tc.rounds || cfg.EtcdMembers != tc.members {
			t.Errorf("%v: ttl %v rounds %d members %d; want %v, %d, %d", tc.args, cfg.TTL, cfg.Rounds, cfg.EtcdMembers,
				tc.ttl, tc.rounds, tc.members)
		}
	}
}

// TestFaultHoldCoversServiceExpiry: a fault outlasts the time the lock service may keep
// the lease (for etcd: the session lease's slack and whole seconds, and the lessor's
// 500ms expiry check), so that the lock really moves before the late write.
func TestFaultHoldCoversServiceExpiry(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.Locks, cfg.TTL, cfg.PauseProb = locksEtcdEmbedded, time.Second, 1
	rng := rand.New(rand.NewPCG(1, 1))
	for range 100 {
		st := cfg.nextStep(rng)
		// etcd expires the 2s session lease (1s TTL + 1s slack) at most 2.5s after its
		// last renewal, which came before the fault; the fault lasts 1.5 to 3 TTLs more
		// than the 1.5s by which that exceeds the TTL.
		if st.fault != faultPause || st.hold < 3*time.Second || st.hold > 4500*time.Millisecond {
			t.Fatalf("etcd fault %+v: want a pause of 3s to 4.5s", st)
		}
	}
	cfg.Locks = locksRedis
	if lag := cfg.serviceLag(); lag != 0 {
		t.Errorf("redis: service lag %v, want 0", lag)
	}
}

func TestEtcdEndpoints(t *testing.T) {
	t.Parallel()
	got, err := etcdEndpoints(" http://127.0.0.1:2379, 10.0.0.2:2379 ,")
	if err != nil || strings.Join(got, ",") != "127.0.0.1:2379,10.0.0.2:2379" {
		t.Errorf("etcdEndpoints = %q, %v", got, err)
	}
	for _, bad := range []string{"", "https://h:2379", "h"} {
		if _, err := etcdEndpoints(bad); err == nil {
			t.Errorf("etcdEndpoints(%q): no error", bad)
		}
	}
}

// TestSQLLocksVia: the lease table's DSN is rewritten to go through a worker's proxy.
func TestSQLLocksVia(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ driver, dsn, target, want string }{
		{"pgx", "postgres://u:p@db.example:5433/app?sslmode=disable", "db.example:5433",
			"postgres://u:p@127.0.0.1:9999/app?connect_timeout=2&sslmode=disable"},
		{"pgx", "host=db.example port=5433 user=u dbname=app", "db.example:5433",
			"host=db.example port=5433 user=u dbname=app host=127.0.0.1 port=9999 connect_timeout=2"},
		{"mysql", "u:p@tcp(db.example:3307)/app?parseTime=true", "db.example:3307",
			"u:p@tcp(127.0.0.1:9999)/app?parseTime=true&timeout=2s"},
	} {
		target, err := sqlTarget(tc.driver, tc.dsn)
		if err != nil || target != tc.target {
			t.Errorf("sqlTarget(%q) = %q, %v; want %q", tc.dsn, target, err, tc.target)
		}
		s := &sqlLocks{driver: tc.driver, dsn: tc.dsn}
		if got, err := s.via("127.0.0.1:9999"); err != nil || got != tc.want {
			t.Errorf("via(%q) = %q, %v; want %q", tc.dsn, got, err, tc.want)
		}
	}
	if _, err := sqlTarget("pgx", "host=/var/run/postgresql dbname=app"); err == nil {
		t.Errorf("a Unix socket DSN: no error")
	}
}

// netConfig is a short drill on a networked lock service: each worker's lock client goes
// through a loopback proxy of its own, which the faults block (and reset, at the end of
// a partition).
func netConfig(locks string, seed uint64) config {
	cfg := smallConfig()
	cfg.Locks = locks
	cfg.TTL = defaultTTL(locks)
	cfg.Seed = seed
	return cfg
}

// TestDrillPostgresEtcd runs the drill on PostgreSQL with a three-member etcd cluster
// started in the process, whose leader is killed half-way through each run: the workers'
// Acquire retries through the election, and the fenced run's invariant holds.
func TestDrillPostgresEtcd(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	cfg := netConfig(locksEtcdEmbedded, 13) // 3 faults in 24 rounds
	cfg.Driver, cfg.DSN = "postgres", dsn
	cfg.Rounds = 6
	cfg.EtcdMembers, cfg.Failover = 3, true
	rep := runDrill(t, cfg)
	for _, rr := range []runReport{rep.Unfenced, rep.Fenced} {
		if len(rr.Failovers) != 1 {
			t.Errorf("%s run: %d failovers, want 1", rr.Name, len(rr.Failovers))
			continue
		}
		f := rr.Failovers[0]
		t.Logf("%s run: failover %+v", rr.Name, f)
		if f.Error != "" || f.Killed == "" || f.NewLeader == "" || f.NewLeader == f.Killed || f.RestartedAfterMS == 0 {
			t.Errorf("%s run: failover %+v: want a killed leader, another one elected and the killed one restarted", rr.Name, f)
		}
		if half := int64(cfg.Workers * cfg.Rounds / 2); f.RoundsBefore < half || f.RoundsBefore >= 2*half {
			t.Errorf("%s run: failover after %d rounds, want half-way (%d)", rr.Name, f.RoundsBefore, half)
		}
	}
}

// TestDrillMySQLRedis runs the drill on MariaDB with Redis locks (redislock).
func TestDrillMySQLRedis(t *testing.T) {
	t.Parallel()
	dsn := testdb.MySQL(t)
	addr, prefix := testdb.Redis(t)
	cfg := netConfig(locksRedis, 17) // 5 faults in 40 rounds
	cfg.Driver, cfg.DSN = "mysql", dsn
	cfg.LockEndpoints, cfg.LockPrefix = addr, prefix
	runDrill(t, cfg)

	// The drill deletes its keys.
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	keys, err := rdb.Keys(context.Background(), prefix+"*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("keys left under %s: %v, %v", prefix, keys, err)
	}
}

// TestDrillMySQLSQLLock runs the drill on MariaDB with the lease table (sqllock) in the
// same database.
func TestDrillMySQLSQLLock(t *testing.T) {
	t.Parallel()
	dsn := testdb.MySQL(t)
	cfg := netConfig(locksSQL, 17)
	cfg.Driver, cfg.DSN = "mysql", dsn
	runDrill(t, cfg)

	// The drill drops the lease table and its token counter and procedure.
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE())
		+ (SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = DATABASE())`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d tables and routines left in the database (err %v), want 0", n, err)
	}
}
