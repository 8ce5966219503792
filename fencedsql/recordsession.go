package fencedsql

import (
	"context"
	"errors"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// checkRecordsSession runs the dialect's session check on c, a pool's first
// connection, before the pool reads what the database records as guarded
// (dialect.RecordsSessionChecker): a session setting that changes the rows of the
// wrapper's own catalog reads — MySQL's sql_select_limit (any value but the
// maximum: 1 reads one registry row, 0 none) or a character_set_results other than
// UTF-8 or binary (a registered name read back in latin1 is a name no statement
// spells) — left a registered table unguarded, with nothing failing (red-team rt40b
// F3, F4). Such a session (a *SessionError with Records) fails the pool whatever the
// schema check says. The session's other findings are left to the lazy check before
// the first guarded write, as for every connection. A query that fails is judged
// as every first-connection read is (firstReadErr): cut, a *CheckCutError and the
// next connection asks again; else logged with the schema check off (a mock driver
// answers none), failing the pool with it on. One query per pool, not per statement;
// the connection's own session check (sessionDirty) is left armed.
func (c *conn) checkRecordsSession(ctx context.Context) error {
	d := c.core.dialect
	rc, ok := d.(dialect.RecordsSessionChecker)
	if !ok || d.SessionQuery() == "" {
		return nil
	}
	var value string
	if t, ok := d.(dialect.SessionTracker); ok {
		value, ok = t.TrackedSession(ctx, c.raw)
		if ok {
			return rc.RecordsSessionError(value)
		}
	}
	vals, err := c.queryStrings(ctx, d.SessionQuery(), nil)
	if err == nil && (len(vals) != 1 || len(vals[0]) != 1) {
		err = errors.New("the session check query did not return one value")
	}
	if err != nil {
		return c.core.firstReadErr(ctx, "", "the session check before reading the guarded tables' records failed", err)
	}
	return rc.RecordsSessionError(vals[0][0])
}
