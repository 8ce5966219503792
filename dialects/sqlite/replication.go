package sqlite

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Replication implements dialect.ReplicationChecker explicitly: SQLite has no
// replication, so there is nothing to report (no finding, Replicas 0). A database
// file copied or streamed by a tool outside SQLite (Litestream, LiteFS, rqlite,
// a replicated volume) is invisible to it; restoring such a copy, or failing over to
// one, must not lose a commit the application was told of, or a stale token's write
// is accepted.
func (dialectImpl) Replication(context.Context, dialect.CatalogQuery) (dialect.ReplicationReport, error) {
	return dialect.ReplicationReport{}, nil
}

var _ dialect.ReplicationChecker = dialectImpl{}
