package schema

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Replication (docs/design.md, "Replication and failover"). Fencing rests on the
// database remembering the highest token that wrote each row. A primary that
// acknowledges a COMMIT before a replica has it forgets that write when it fails and
// the replica is promoted: the stale holder's write that the forgotten token fenced is
// then accepted. Check therefore reports, through a dialect's ReplicationChecker,
// a guarded database that replicates asynchronously, with the settings that fix it.

// checkReplication runs d's ReplicationChecker, if any, on db. A dialect without one
// gets a report with Checked false.
func checkReplication(ctx context.Context, db *sql.DB, d dialect.Dialect) (dialect.ReplicationReport, error) {
	rc, ok := d.(dialect.ReplicationChecker)
	if !ok {
		return dialect.ReplicationReport{}, nil
	}
	rep, err := rc.Replication(ctx, catalogQuery(db))
	if err != nil {
		return dialect.ReplicationReport{}, fmt.Errorf("fencedsql: schema.Check: the replication query failed: %w", err)
	}
	rep.Checked = true
	return rep, nil
}

// addReplication copies rep into r: every finding in r.Replication, each problem also
// in r.Problems as "replication: <finding>". Its Fix statements stay in the finding,
// never in r.Fix (see ReplicationFinding.Fix).
func addReplication(r *TableReport, rep dialect.ReplicationReport) {
	r.Replication = rep
	for _, f := range rep.Findings {
		if !f.Note {
			r.Problems = append(r.Problems, "replication: "+f.String())
		}
	}
}
