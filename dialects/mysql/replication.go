package mysql

import (
	"context"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Replication implements dialect.ReplicationChecker: whether a failover from this
// server (a replication source) may forget a COMMIT it acknowledged. It reads, in
// three queries, the global variables log_bin, wsrep_on and the semi-synchronous
// source's settings under both spellings (MariaDB and MySQL before 8.0.26:
// rpl_semi_sync_master_*; MySQL 8.0.26 and later: rpl_semi_sync_source_*), the
// status Rpl_semi_sync_{master,source}_status and _clients, and the binlog dump
// threads in information_schema.PROCESSLIST (one per connected replica).
// judgeReplication decides:
//
//   - replicas connected and semi-sync not enabled (or its plugin not loaded):
//     asynchronous replication, a problem: the source acknowledges a COMMIT before
//     any replica has it, and a failover forgets it;
//   - semi-sync enabled, each of these a problem: a wait point other than
//     AFTER_SYNC (with AFTER_COMMIT other sessions see, and fence against, a commit
//     no replica has yet); a timeout below one day (rpl_semi_sync_master_timeout, in
//     milliseconds: after it the source falls back to asynchronous replication,
//     silently; a day or more is taken as "never", long past any failover);
//     wait_no_slave / wait_no_replica OFF (it falls back as soon as no semi-sync
//     replica is connected); and the status OFF (it has fallen back now);
//   - the fix: SET GLOBAL rpl_semi_sync_master_enabled = ON, wait_point =
//     'AFTER_SYNC', timeout = 4294967295 (its maximum), wait_no_slave = ON (or the
//     rpl_semi_sync_source_* names), the same in the server's configuration file, and
//     on every replica rpl_semi_sync_slave_enabled (replica_enabled) = ON and a
//     restart of its I/O thread;
//   - no replica seen: a note, "no replica: a failover would need a replica that has
//     every acknowledged write" (a single server is fine for fencing); it adds that
//     the binary log is off (no replica can follow this server), or that an account
//     without the PROCESS privilege sees only its own threads;
//   - wsrep_on = ON (Galera): a note: certification-based replication is not judged
//     here.
//
// It cannot see: a managed service's replication (RDS Multi-AZ, Aurora, Cloud SQL HA,
// Azure HA), replicas behind a proxy or attached to another node (cascading, a
// binlog server), Galera's or group replication's guarantees, and whether the failover
// tool applies a replica's relay log before promoting it (it must: MariaDB's
// semi-sync ACK is sent when the relay log is written, not when it is applied).
func (dialectImpl) Replication(ctx context.Context, query dialect.CatalogQuery) (dialect.ReplicationReport, error) {
	s := myReplication{Vars: map[string]string{}, Status: map[string]string{}}
	rows, err := query(ctx, `SHOW GLOBAL VARIABLES WHERE Variable_name IN ('log_bin', 'wsrep_on',
 'rpl_semi_sync_master_enabled', 'rpl_semi_sync_master_wait_point', 'rpl_semi_sync_master_timeout', 'rpl_semi_sync_master_wait_no_slave',
 'rpl_semi_sync_source_enabled', 'rpl_semi_sync_source_wait_point', 'rpl_semi_sync_source_timeout', 'rpl_semi_sync_source_wait_no_replica')`)
	if err != nil {
		return dialect.ReplicationReport{}, err
	}
	for _, r := range rows {
		if len(r) == 2 {
			s.Vars[strings.ToLower(r[0])] = r[1]
		}
	}
	rows, err = query(ctx, `SHOW GLOBAL STATUS WHERE Variable_name IN ('Rpl_semi_sync_master_status', 'Rpl_semi_sync_master_clients', 'Rpl_semi_sync_source_status', 'Rpl_semi_sync_source_clients')`)
	if err != nil {
		return dialect.ReplicationReport{}, err
	}
	for _, r := range rows {
		if len(r) == 2 {
			s.Status[strings.ToLower(r[0])] = r[1]
		}
	}
	rows, err = query(ctx, `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Binlog Dump', 'Binlog Dump GTID')`)
	if err != nil {
		return dialect.ReplicationReport{}, err
	}
	if len(rows) == 1 && len(rows[0]) == 1 {
		s.DumpThreads, _ = strconv.Atoi(rows[0][0])
	}
	return judgeReplication(s), nil
}

// myReplication is what Replication reads: global variables and status by lower-case
// name, and the number of binlog dump threads seen.
type myReplication struct {
	Vars, Status map[string]string
	DumpThreads  int
}

// minSemiSyncTimeoutMS is the shortest semi-sync timeout taken as "never falls back":
// one day.
const minSemiSyncTimeoutMS = 24 * 60 * 60 * 1000

func on(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "ON", "1", "TRUE", "YES":
		return true
	}
	return false
}

// judgeReplication turns what Replication read into findings (see Replication).
func judgeReplication(s myReplication) dialect.ReplicationReport {
	var rep dialect.ReplicationReport
	add := func(f dialect.ReplicationFinding) { rep.Findings = append(rep.Findings, f) }
	if on(s.Vars["wsrep_on"]) {
		add(dialect.ReplicationFinding{Setting: "wsrep_on", Value: s.Vars["wsrep_on"], Note: true,
			Problem: "Galera cluster: its certification-based replication is not judged by this check"})
	}
	// The names: MySQL 8.0.26+ has rpl_semi_sync_source_*, MariaDB and older MySQL
	// rpl_semi_sync_master_*.
	pre, noWait, replicaVar := "rpl_semi_sync_master_", "rpl_semi_sync_master_wait_no_slave", "rpl_semi_sync_slave_enabled"
	statusPre := "rpl_semi_sync_master_"
	if _, ok := s.Vars["rpl_semi_sync_source_enabled"]; ok {
		pre, noWait, replicaVar = "rpl_semi_sync_source_", "rpl_semi_sync_source_wait_no_replica", "rpl_semi_sync_replica_enabled"
		statusPre = "rpl_semi_sync_source_"
	}
	enabledVal, loaded := s.Vars[pre+"enabled"]
	enabled := loaded && on(enabledVal)
	clients, _ := strconv.Atoi(s.Status[statusPre+"clients"])
	replicas := max(s.DumpThreads, clients)
	rep.Replicas = replicas

	fix := []string{
		"SET GLOBAL " + pre + "enabled = ON",
		"SET GLOBAL " + pre + "wait_point = 'AFTER_SYNC'",
		"SET GLOBAL " + pre + "timeout = 4294967295",
		"SET GLOBAL " + noWait + " = ON",
		"-- the same four settings in the server's configuration file; on every replica: SET GLOBAL " + replicaVar + " = ON, then restart its I/O thread, and in its configuration file",
	}
	if !loaded {
		plugin := "INSTALL SONAME 'semisync_master'"
		if pre == "rpl_semi_sync_source_" {
			plugin = "INSTALL PLUGIN rpl_semi_sync_source SONAME 'semisync_source.so'"
		}
		fix = append([]string{"-- the semi-sync plugin is not loaded (MySQL: INSTALL PLUGIN rpl_semi_sync_source SONAME 'semisync_source.so'; MariaDB before 10.3.3: " + plugin + ")"}, fix...)
	}

	if replicas == 0 && !enabled {
		why := "no replica connected (seen as binlog dump threads; an account without the PROCESS privilege sees only its own threads)"
		if !on(s.Vars["log_bin"]) {
			why = "the binary log is off (log_bin = OFF): no replica can follow this server"
		}
		add(dialect.ReplicationFinding{Setting: "replicas", Value: "none seen", Note: true,
			Problem: "no replica: a failover would need a replica that has every acknowledged write (semi-synchronous, AFTER_SYNC, no fall-back); a single server is fine for fencing; " + why + "; a managed service's replication (RDS Multi-AZ, Aurora, Cloud SQL HA, Azure HA) is invisible here"})
		return rep
	}
	if !enabled {
		add(dialect.ReplicationFinding{Setting: pre + "enabled", Value: enabledVal, Fix: fix,
			Problem: strconv.Itoa(replicas) + " replica(s) replicate asynchronously: the source acknowledges a COMMIT before any replica has it, and a failover forgets it (a stale token's write is then accepted)"})
		return rep
	}
	if wp := s.Vars[pre+"wait_point"]; !strings.EqualFold(strings.TrimSpace(wp), "AFTER_SYNC") {
		add(dialect.ReplicationFinding{Setting: pre + "wait_point", Value: wp, Fix: []string{fix[1], fix[4]},
			Problem: "the source commits before a replica has the transaction: other sessions see, and are fenced by, a token a failover forgets"})
	}
	if t, err := strconv.ParseInt(strings.TrimSpace(s.Vars[pre+"timeout"]), 10, 64); err != nil || t < minSemiSyncTimeoutMS {
		add(dialect.ReplicationFinding{Setting: pre + "timeout", Value: s.Vars[pre+"timeout"], Fix: []string{fix[2], fix[4]},
			Problem: "after this many milliseconds without a replica's acknowledgement the source falls back to asynchronous replication, silently, and a failover then forgets what it acknowledged"})
	}
	if v, ok := s.Vars[noWait]; ok && !on(v) {
		add(dialect.ReplicationFinding{Setting: noWait, Value: v, Fix: []string{fix[3], fix[4]},
			Problem: "the source falls back to asynchronous replication as soon as no semi-synchronous replica is connected"})
	}
	if st := s.Status[statusPre+"status"]; !on(st) {
		add(dialect.ReplicationFinding{Setting: strings.ToUpper(statusPre[:1]) + statusPre[1:] + "status", Value: st,
			Problem: "semi-synchronous replication is not active now (fallen back to asynchronous, or no semi-sync replica): commits are acknowledged without a replica; check " + replicaVar + " and the replicas' connection"})
	}
	return rep
}

var _ dialect.ReplicationChecker = dialectImpl{}
