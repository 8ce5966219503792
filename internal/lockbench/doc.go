// Package lockbench holds the lock client's contention and scale benchmarks, run with
// go test -bench (see BENCHMARKS.md for the commands and recorded figures):
//
//   - BenchmarkContention: 16 and 64 contenders on one key, each with its own client
//     (its own etcd client, Redis client or *sql.DB, and its own lockclient.Client),
//     take the lock, hold it about 1 ms, release it and take it again. Every backend —
//     etcdlock and etcd's own concurrency.Mutex on the same embedded etcd, redislock,
//     sqllock on PostgreSQL and on MariaDB — runs in turn, one window each per
//     iteration, so that machine load drifts hit them alike. Reported per backend:
//     handoffs/s and the p50, p99 and longest acquire wait.
//   - BenchmarkManyLocks: 100 etcd clients holding 10,000 keys: keep-alive requests
//     per second, memory per held lock, and the time until every key of a client whose
//     process died (its session lease expires) is granted to a waiter again.
//
// Servers come from the environment like the tests' (FENCEDSQL_PG_DSN,
// FENCEDSQL_MYSQL_DSN, FENCEDSQL_REDIS_ADDR, see internal/testdb); a backend whose
// server is not configured is left out with a log line. LOCKBENCH_BACKENDS (a
// comma-separated subset of etcdlock,mutex,redislock,postgres,mariadb) and
// LOCKBENCH_WINDOW (a duration, default 3s) narrow a run.
package lockbench
