// Package failover is fencedsql's database failover harness and test: it starts a
// PostgreSQL primary + streaming replica pair and a MariaDB primary + replica pair on
// loopback, kills the primary hard right after a fenced write was acknowledged,
// promotes the replica, runs the floor hook (schema.RaiseTokenFloor to the lock
// service's last token + 1) on the new primary, and measures, round after round,
// whether the acknowledged write was lost and whether a stale holder's write was
// accepted — with asynchronous and with synchronous replication (PostgreSQL
// synchronous_standby_names + synchronous_commit = on; MariaDB semi-sync, wait point
// AFTER_SYNC).
//
// The servers are the harness's own: scripts/servers.sh only exports where the binaries
// are and a directory for the data (FENCEDSQL_FAILOVER_DIR, FENCEDSQL_PG_BIN,
// FENCEDSQL_MYSQLD, FENCEDSQL_MYSQL_INSTALL_DB). Run as root, the servers run as the
// users postgres and mysql. Each server runs in its own process group, so a kill takes
// the postmaster and every backend at once (a crash, not a shutdown).
//
// FENCEDSQL_FAILOVER_ROUNDS sets the rounds per database and mode (default 10, the CI
// form); the long form used for BENCHMARKS.md is 50.
package failover
