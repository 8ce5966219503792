package dialect

import "context"

// ReplicationChecker is implemented by dialects that can tell, from the server they are
// connected to, whether a failover may forget a write the server acknowledged: a
// primary replicating asynchronously, a synchronous set-up weakened by a setting, or
// one that falls back to asynchronous replication. schema.Check runs it once per call
// and reports its findings on every table (TableReport.Replication): its problems are
// also in each TableReport.Problems (so OK is false), its notes only in Replication.
//
// What it cannot see, and the dialect packages restate for their database: replication
// it is not told about — a managed service's own (RDS Multi-AZ, Aurora, Cloud SQL HA,
// Azure HA: storage or service-level replication, no standby in the server's views), a
// replica behind a proxy or connected to another node, a cascaded replica, Galera or
// other multi-primary clusters — and what the failover tool will do (whether it
// promotes only a synchronous standby, applies a replica's relay log first).
type ReplicationChecker interface {
	// Replication inspects the server through query (read-only: settings, status and
	// replication views) and returns what it found; an error is a failed query (the
	// answer is unknown). A setting the account may not read is a note saying so,
	// never a guess.
	Replication(ctx context.Context, query CatalogQuery) (ReplicationReport, error)
}

// ReplicationReport is what a ReplicationChecker found on the server of a guarded
// database. It is the same for every table of one schema.Check call.
type ReplicationReport struct {
	// Checked: the dialect implements ReplicationChecker (false: nothing is known).
	Checked bool
	// Replicas is the number of replicas (standbys) the server showed as connected to
	// it; 0 for none seen (see the notes for what could not be seen).
	Replicas int
	// Findings, problems and notes, in the order found.
	Findings []ReplicationFinding
}

// ReplicationFinding is one problem or note about the replication of a guarded
// database.
type ReplicationFinding struct {
	// Setting names what was read ("synchronous_standby_names",
	// "rpl_semi_sync_master_timeout", "pg_stat_replication", "role app", …) and Value
	// its value as read.
	Setting, Value string
	// Problem says in words what may be forgotten and why, or what could not be seen.
	Problem string
	// Fix holds the statements (or, for a configuration file, the lines) an operator
	// runs to fix it, in order; empty when it takes a decision no statement can make
	// (which standbys to wait for). fencedsql-schema -apply never runs them: they
	// change the server for every database, ALTER SYSTEM cannot run in a transaction,
	// and the replicas need the matching change (see the dialect packages).
	Fix []string
	// Note: worth knowing, not a problem (the table stays OK).
	Note bool
}

// OK reports whether no finding is a problem.
func (r ReplicationReport) OK() bool {
	for _, f := range r.Findings {
		if !f.Note {
			return false
		}
	}
	return true
}

// String renders the finding as one line: "setting = 'value': problem".
func (f ReplicationFinding) String() string {
	s := f.Setting
	if f.Value != "" {
		s += " = '" + f.Value + "'"
	}
	return s + ": " + f.Problem
}
