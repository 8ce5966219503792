package failover

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
)

// Mode is how the replica follows the primary.
type Mode string

const (
	// Async: the primary acknowledges a commit without waiting for the replica
	// (PostgreSQL without synchronous_standby_names; MariaDB without semi-sync).
	Async Mode = "async"
	// Sync: the primary acknowledges a commit only once the replica has it
	// (PostgreSQL synchronous_standby_names = '*' and synchronous_commit = on: flushed
	// on the standby; MariaDB semi-sync, wait point AFTER_SYNC, with the longest timeout,
	// 4294967295 ms, so it never falls back to async).
	Sync Mode = "sync"
)

// Pair is a primary and a replica of one database. After Failover the promoted
// replica is the primary and there is no replica until Rebuild.
type Pair interface {
	// DSN is the plain driver's DSN of the current primary's test database (no
	// fencedsql parameters).
	DSN() string
	// Failover kills the primary hard (SIGKILL of its process group) and promotes the
	// replica as a careful operator or orchestrator would (MariaDB: after the relay
	// log is applied). In Sync mode the new primary then stops waiting for a standby
	// (there is none until Rebuild).
	Failover(ctx context.Context) error
	// Rebuild makes a fresh replica of the current primary, waits until it is
	// streaming and caught up, and in Sync mode makes the primary wait for it again.
	Rebuild(ctx context.Context) error
	// Close kills both servers and removes their files.
	Close() error
}

// Environment variables exported by scripts/servers.sh for this package.
const (
	EnvDir       = "FENCEDSQL_FAILOVER_DIR"
	EnvPGBin     = "FENCEDSQL_PG_BIN"
	EnvMySQLD    = "FENCEDSQL_MYSQLD"
	EnvInstallDB = "FENCEDSQL_MYSQL_INSTALL_DB"
	EnvRounds    = "FENCEDSQL_FAILOVER_ROUNDS"
)

// Env is where the harness finds the binaries and puts the servers' files.
type Env struct {
	Dir       string // parent of every pair's directory
	PGBin     string // PostgreSQL's bin directory
	MySQLD    string // mariadbd
	InstallDB string // mariadb-install-db
}

// EnvFromOS reads Env from the environment; missing names the first unset variable.
func EnvFromOS() (env Env, missing string) {
	env = Env{Dir: os.Getenv(EnvDir), PGBin: os.Getenv(EnvPGBin), MySQLD: os.Getenv(EnvMySQLD),
		InstallDB: os.Getenv(EnvInstallDB)}
	for _, kv := range [][2]string{{EnvDir, env.Dir}, {EnvPGBin, env.PGBin}, {EnvMySQLD, env.MySQLD}, {EnvInstallDB, env.InstallDB}} {
		if strings.TrimSpace(kv[1]) == "" {
			return env, kv[0]
		}
	}
	return env, ""
}

// freePort returns a loopback TCP port free at the time of the call.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("failover: picking a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
