package schema

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// requireCurrentReads refuses, for a dialect.PastReader, a MaxToken transaction whose
// session reads tables as they were at an earlier time (MariaDB: a
// system_versioning_asof set by the DSN, init_connect or a SET on the pooled
// connection makes every SELECT of a system-versioned guarded table read the rows of
// then, and MAX(token) misses the tokens written since: red-team rt50b F4). It runs
// once, first in MaxToken's transaction: every later read of that transaction runs on
// the same connection, and none of them changes the setting. A session is refused, not
// changed: setting it back would change the caller's pooled connection for good.
func requireCurrentReads(ctx context.Context, tx *sql.Tx, d dialect.Dialect) error {
	p, ok := d.(dialect.PastReader)
	if !ok {
		return nil
	}
	var v sql.NullString
	if err := tx.QueryRowContext(ctx, p.PastReadQuery()).Scan(&v); err != nil {
		return fmt.Errorf("fencedsql: MaxToken: reading the session's settings: %w", err)
	}
	if setting := p.PastRead(v.String); setting != "" {
		return &MaxTokenSessionError{Setting: setting}
	}
	return nil
}
