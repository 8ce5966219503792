package fencedsql

import (
	"context"
	"database/sql"
	"fmt"
)

// Replication (docs/design.md, "Replication and failover"). Fencing rests on the
// database remembering the highest token that wrote each row. A primary that
// acknowledges a COMMIT before a replica has it forgets that write when it fails and
// the replica is promoted: the stale holder's write that the forgotten token fenced is
// then accepted. CheckSchema therefore reports, through a dialect's ReplicationChecker,
// a guarded database that replicates asynchronously, with the settings that fix it.

// ReplicationChecker is implemented by dialects that can tell, from the server they are
// connected to, whether a failover may forget a write the server acknowledged: a
// primary replicating asynchronously, a synchronous set-up weakened by a setting, or
// one that falls back to asynchronous replication. CheckSchema runs it once per call
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
// database. It is the same for every table of one CheckSchema call.
type ReplicationReport struct {
	// Checked: the dialect implements ReplicationChecker (false: nothing is known).
	Checked bool
	// Replicas is the number of replicas (standbys) the server showed as connected to
	// it; 0 for none seen (see the notes for what could not be seen).
	Replicas int
	// Findings, problems and notes, in the order found.
	Findings []ReplicationFinding
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

// String renders the finding as one line: "setting = 'value': problem".
func (f ReplicationFinding) String() string {
	s := f.Setting
	if f.Value != "" {
		s += " = '" + f.Value + "'"
	}
	return s + ": " + f.Problem
}

// checkReplication runs d's ReplicationChecker, if any, on db. A dialect without one
// gets a report with Checked false.
func checkReplication(ctx context.Context, db *sql.DB, d Dialect) (ReplicationReport, error) {
	rc, ok := d.(ReplicationChecker)
	if !ok {
		return ReplicationReport{}, nil
	}
	rep, err := rc.Replication(ctx, catalogQuery(db))
	if err != nil {
		return ReplicationReport{}, fmt.Errorf("fencedsql: CheckSchema: the replication query failed: %w", err)
	}
	rep.Checked = true
	return rep, nil
}

// addReplication copies rep into r: every finding in r.Replication, each problem also
// in r.Problems as "replication: <finding>". Its Fix statements stay in the finding,
// never in r.Fix (see ReplicationFinding.Fix).
func addReplication(r *TableReport, rep ReplicationReport) {
	r.Replication = rep
	for _, f := range rep.Findings {
		if !f.Note {
			r.Problems = append(r.Problems, "replication: "+f.String())
		}
	}
}
