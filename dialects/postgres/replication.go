package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Replication implements dialect.ReplicationChecker: whether a failover from this
// server may forget a COMMIT it acknowledged. It reads, in three queries,
// synchronous_standby_names, synchronous_commit (value and source) and
// pg_is_in_recovery(); the standbys in pg_stat_replication (application_name,
// sync_state); and the synchronous_commit defaults set by ALTER ROLE / ALTER DATABASE
// … SET that apply in the current database (pg_db_role_setting). judgeReplication
// decides:
//
//   - standbys connected and synchronous_standby_names empty: asynchronous
//     replication, a problem (fix: ALTER SYSTEM SET synchronous_standby_names =
//     'ANY 1 (*)', reload);
//   - synchronous standbys configured, and synchronous_commit below remote_write
//     (off or local) at the server level or in a role's or database's default: a
//     problem (those commits do not wait for the standby; fix: ALTER SYSTEM SET
//     synchronous_commit = 'on', ALTER ROLE/DATABASE … RESET synchronous_commit).
//     remote_write is accepted, as the wrapper's refusal of SET synchronous_commit
//     accepts it: the standby has received and written the commit, which is lost
//     only if the standby's operating system crashes together with the primary; it is
//     a note. on and remote_apply are fine;
//   - a standby whose sync_state is async or potential while synchronous ones exist: a
//     note (it may lack acknowledged writes: promote only a sync or quorum standby);
//     sync_state unreadable (the account lacks pg_read_all_stats): a note;
//   - synchronous_standby_names set and no standby connected: a note (commits wait
//     for one; nothing acknowledged is forgotten);
//   - no standby and synchronous_standby_names empty: a note, "no replica: a
//     failover would need a replica that has every acknowledged write". A single
//     server is fine for fencing (it forgets nothing that it flushed), and a managed
//     service's replication (RDS Multi-AZ, Aurora, Cloud SQL HA, Azure HA) shows no
//     standby here: the note says so;
//   - synchronous_commit = off without synchronous standbys: a note: a crash of this
//     server forgets the commits of its last moments (up to three
//     wal_writer_delay), like any failover; crash durability (fsync,
//     synchronous_commit on a single server) is the operator's choice and is not
//     judged a problem here;
//   - this server in recovery (a standby): a note, run the check on the primary.
//
// It cannot see: replication outside the server's views (managed services,
// storage-level replication), standbys of standbys (cascading), standbys that a
// failover tool would promote regardless of sync_state, logical replication.
func (dialectImpl) Replication(ctx context.Context, query dialect.CatalogQuery) (dialect.ReplicationReport, error) {
	var s pgReplication
	rows, err := query(ctx, `SELECT current_setting('synchronous_standby_names'), s.setting, s.source,
 CASE WHEN pg_is_in_recovery() THEN 1 ELSE 0 END,
 CASE WHEN pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') THEN 1 ELSE 0 END
 FROM pg_catalog.pg_settings s WHERE s.name = 'synchronous_commit'`)
	if err != nil {
		return dialect.ReplicationReport{}, err
	}
	if len(rows) == 1 && len(rows[0]) == 5 {
		r := rows[0]
		s.StandbyNames, s.SyncCommit, s.Source = strings.TrimSpace(r[0]), r[1], r[2]
		s.InRecovery, s.SeeStats = r[3] == "1", r[4] == "1"
	}
	rows, err = query(ctx, `SELECT COALESCE(application_name, ''), COALESCE(sync_state, '') FROM pg_catalog.pg_stat_replication ORDER BY 1`)
	if err != nil {
		return dialect.ReplicationReport{}, err
	}
	for _, r := range rows {
		s.Standbys = append(s.Standbys, pgStandby{Name: r[0], SyncState: r[1]})
	}
	rows, err = query(ctx, `SELECT COALESCE(r.rolname, ''), COALESCE(d.datname, ''), substr(c.cfg, length('synchronous_commit=') + 1)
 FROM pg_catalog.pg_db_role_setting s
 LEFT JOIN pg_catalog.pg_roles r ON r.oid = s.setrole
 LEFT JOIN pg_catalog.pg_database d ON d.oid = s.setdatabase
 CROSS JOIN LATERAL unnest(s.setconfig) AS c(cfg)
 WHERE (s.setdatabase = 0 OR d.datname = current_database()) AND lower(c.cfg) LIKE 'synchronous\_commit=%'
 ORDER BY 1, 2`)
	if err != nil {
		return dialect.ReplicationReport{}, err
	}
	for _, r := range rows {
		s.Overrides = append(s.Overrides, pgOverride{Role: r[0], Database: r[1], Value: r[2]})
	}
	return judgeReplication(s), nil
}

// pgReplication is what Replication reads.
type pgReplication struct {
	StandbyNames string // synchronous_standby_names
	SyncCommit   string // synchronous_commit as this connection has it
	Source       string // its pg_settings.source
	InRecovery   bool   // pg_is_in_recovery()
	SeeStats     bool   // the account may read pg_stat_replication's columns
	Standbys     []pgStandby
	Overrides    []pgOverride // synchronous_commit set by ALTER ROLE / ALTER DATABASE … SET
}

type pgStandby struct{ Name, SyncState string }

// pgOverride is one ALTER ROLE/DATABASE … SET synchronous_commit: Role "" for every
// role (ALTER DATABASE), Database "" for every database (ALTER ROLE).
type pgOverride struct{ Role, Database, Value string }

// syncCommitStrength orders synchronous_commit's values; below remote_write (2) a
// commit is acknowledged before a synchronous standby has it. Unknown values count as
// on.
func syncCommitStrength(v string) int {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "off", "false", "no", "0":
		return 0
	case "local":
		return 1
	case "remote_write":
		return 2
	case "remote_apply":
		return 4
	}
	return 3
}

// serverSource reports whether a pg_settings.source is the server's own (not a
// role's, a database's, the client's or the session's).
func serverSource(src string) bool {
	switch src {
	case "default", "environment variable", "configuration file", "command line", "global", "override":
		return true
	}
	return false
}

const (
	fixReload        = "SELECT pg_reload_conf()"
	fixSyncNames     = "ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 (*)'"
	fixSyncCommit    = "ALTER SYSTEM SET synchronous_commit = 'on'"
	managedInvisible = "a managed service's replication (RDS Multi-AZ, Aurora, Cloud SQL HA, Azure HA) is invisible here"
)

// judgeReplication turns what Replication read into findings (see Replication).
func judgeReplication(s pgReplication) dialect.ReplicationReport {
	rep := dialect.ReplicationReport{Replicas: len(s.Standbys)}
	add := func(f dialect.ReplicationFinding) { rep.Findings = append(rep.Findings, f) }
	if s.InRecovery {
		add(dialect.ReplicationFinding{Setting: "pg_is_in_recovery()", Value: "true", Note: true,
			Problem: "this server is a standby: run the check on the primary"})
		return rep
	}
	syncConfigured := s.StandbyNames != ""
	quote := Dialect.QuoteIdent
	names := make([]string, 0, len(s.Standbys))
	for _, sb := range s.Standbys {
		names = append(names, sb.Name)
	}
	switch {
	case len(s.Standbys) == 0 && !syncConfigured:
		add(dialect.ReplicationFinding{Setting: "pg_stat_replication", Value: "no standby", Note: true,
			Problem: "no replica: a failover would need a replica that has every acknowledged write (set up synchronous replication before adding one); a single server is fine for fencing; " + managedInvisible})
	case len(s.Standbys) > 0 && !syncConfigured:
		add(dialect.ReplicationFinding{Setting: "synchronous_standby_names", Value: "",
			Problem: strconv.Itoa(len(s.Standbys)) + " standby(s) (" + strings.Join(names, ", ") + ") replicate asynchronously: the primary acknowledges a COMMIT before any standby has it, and a failover to a standby forgets it (a stale token's write is then accepted); make them synchronous and keep synchronous_commit on or remote_apply",
			Fix:     []string{fixSyncNames, fixReload}})
	case len(s.Standbys) == 0 && syncConfigured:
		add(dialect.ReplicationFinding{Setting: "synchronous_standby_names", Value: s.StandbyNames, Note: true,
			Problem: "no standby is connected: commits wait for one (nothing acknowledged is forgotten, but nothing is acknowledged)"})
	default:
		judgeStandbys(s, add)
	}
	// synchronous_commit: a problem only where synchronous standbys are configured
	// (without them, local is on, and off loses the last commits at a crash: a note).
	judge := func(setting, value string, fix []string) {
		switch str := syncCommitStrength(value); {
		case syncConfigured && str < 2:
			add(dialect.ReplicationFinding{Setting: setting, Value: value, Fix: fix,
				Problem: "commits are acknowledged before the synchronous standby has them: a failover forgets them; use on or remote_apply"})
		case syncConfigured && str == 2:
			add(dialect.ReplicationFinding{Setting: setting, Value: value, Note: true,
				Problem: "the standby has written but not flushed an acknowledged commit: lost only if its operating system crashes together with the primary; on or remote_apply close that too"})
		case !syncConfigured && str == 0:
			add(dialect.ReplicationFinding{Setting: setting, Value: value, Note: true, Fix: fix,
				Problem: "a crash of this server forgets the commits it acknowledged in its last moments (up to three wal_writer_delay): a stale token's write may then be accepted; use on"})
		}
	}
	if serverSource(s.Source) {
		judge("synchronous_commit", s.SyncCommit, []string{fixSyncCommit, fixReload})
	} else if s.Source != "" {
		add(dialect.ReplicationFinding{Setting: "synchronous_commit", Value: s.SyncCommit, Note: true,
			Problem: "this connection's value comes from " + s.Source + ", so the server's own value is not visible; check it with SHOW synchronous_commit in a session without role or database defaults"})
	}
	for _, o := range s.Overrides {
		setting, fix := "synchronous_commit", ""
		switch {
		case o.Role != "" && o.Database != "":
			setting = "synchronous_commit of role " + o.Role + " in database " + o.Database
			fix = "ALTER ROLE " + quote(o.Role) + " IN DATABASE " + quote(o.Database) + " RESET synchronous_commit"
		case o.Role != "":
			setting = "synchronous_commit of role " + o.Role
			fix = "ALTER ROLE " + quote(o.Role) + " RESET synchronous_commit"
		default:
			setting = "synchronous_commit of database " + o.Database
			fix = "ALTER DATABASE " + quote(o.Database) + " RESET synchronous_commit"
		}
		judge(setting, o.Value, []string{fix})
	}
	return rep
}

// judgeStandbys: standbys connected and synchronous_standby_names set.
func judgeStandbys(s pgReplication, add func(dialect.ReplicationFinding)) {
	if !s.SeeStats {
		add(dialect.ReplicationFinding{Setting: "pg_stat_replication.sync_state", Note: true,
			Problem: "not readable by this account (GRANT pg_read_all_stats TO it): which standbys are synchronous is not checked"})
		return
	}
	sync := 0
	for _, sb := range s.Standbys {
		if sb.SyncState == "sync" || sb.SyncState == "quorum" {
			sync++
		}
	}
	if sync == 0 {
		add(dialect.ReplicationFinding{Setting: "synchronous_standby_names", Value: s.StandbyNames, Note: true,
			Problem: "no connected standby is synchronous (none matches): commits wait for one"})
		return
	}
	for _, sb := range s.Standbys {
		if sb.SyncState == "async" || sb.SyncState == "potential" {
			add(dialect.ReplicationFinding{Setting: "pg_stat_replication.sync_state of " + sb.Name, Value: sb.SyncState, Note: true,
				Problem: "this standby may lack acknowledged writes: a failover must promote a sync or quorum standby, never this one"})
		}
	}
}

var _ dialect.ReplicationChecker = dialectImpl{}
