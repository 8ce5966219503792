package schema

import (
	"context"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// recordsSession refuses a session in which the catalog reads of op would not read
// what is installed: it runs the dialect's session check on q (the connection, or a
// connection of the pool, the reads that follow use) and returns the dialect's
// judgement of the settings that change those reads' rows
// (dialect.RecordsSessionChecker.RecordsSessionError: MySQL's sql_select_limit,
// character_set_results, the sql_mode EMPTY_STRING_IS_NULL), a *fencedsql.SessionError
// with Records, wrapped — the judgement the pool makes on its first connection.
// Without it, Check under sql_select_limit=1 read one column of a healthy guard and
// reported the others missing, with an ALTER TABLE that fails (red-team rt52b F4).
// A session query that fails (a mock answering none) is left to the reads that follow,
// which fail on a connection that cannot answer it.
//
// Where the dialect also judges the settings that convert the names the tool sends
// (dialect.ToolSessionChecker: PostgreSQL's client_encoding, MySQL/MariaDB's
// character_set_client), that judgement is used instead: RegisterTables, Check,
// MaxToken and PurgeTombstones refuse such a session before they write or look up a
// name (red-team rt56a F4).
func recordsSession(ctx context.Context, q querier, d dialect.Dialect, op string) error {
	judge := func(string) error { return nil }
	if rc, ok := d.(dialect.RecordsSessionChecker); ok {
		judge = rc.RecordsSessionError
	}
	tc, tool := d.(dialect.ToolSessionChecker)
	if tool {
		judge = tc.ToolSessionError
	}
	if _, records := d.(dialect.RecordsSessionChecker); !(records || tool) || d.SessionQuery() == "" {
		return nil
	}
	var value string
	if err := q.QueryRowContext(ctx, d.SessionQuery()).Scan(&value); err != nil {
		return nil
	}
	if err := judge(value); err != nil {
		return fmt.Errorf("fencedsql: %s: %w", op, err)
	}
	return nil
}
