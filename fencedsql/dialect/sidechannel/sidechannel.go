// Package sidechannel lists the functions that reach relations by a side channel
// (red-team rt65a F2, F3): a call of one runs or changes what no statement text names,
// so the wrapper cannot fence it. One list for every check that judges such a call:
// the PostgreSQL door checks read stored code (routine and trigger bodies, views,
// rules, column defaults, CHECK constraints, policies, trigger WHEN clauses) with it,
// and the planner refuses these calls in statements sent through a pool by it. It
// imports nothing of the module, so the planner (a pure function of SQL text) and the
// dialects can both read it.
package sidechannel

import "strings"

// SQLTextSenders returns the functions that send SQL text to a server on a
// connection of their own (PostgreSQL's dblink extension): the text runs in another
// session, past the wrapper, and may write anything. dblink_open sends DECLARE …
// CURSOR FOR its query; dblink_fetch and dblink_close splice their cursor name into
// FETCH and CLOSE text unquoted, so that name is SQL text too. Not listed:
// dblink_connect (a connection string, no statement), dblink_get_result,
// dblink_cancel_query, dblink_disconnect (no text sent) and dblink_build_sql_* (they
// build text and send none).
func SQLTextSenders() []string {
	return []string{"dblink", "dblink_exec", "dblink_open", "dblink_fetch", "dblink_close", "dblink_send_query"}
}

// RowSurgeryFuncs returns PostgreSQL's pg_surgery functions, which kill or freeze row
// versions in place, by physical address, without the relation's triggers (a
// guarded row, a tombstone, the token floor's row). What they reach is a regclass,
// which an OID spells as well as a name: a call reaches every table.
func RowSurgeryFuncs() []string {
	return []string{"heap_force_kill", "heap_force_freeze"}
}

// IsSQLTextSender reports whether name (unquoted, any case) is one of SQLTextSenders.
func IsSQLTextSender(name string) bool { return inFold(SQLTextSenders(), name) }

// IsRowSurgeryFunc reports whether name (unquoted, any case) is one of RowSurgeryFuncs.
func IsRowSurgeryFunc(name string) bool { return inFold(RowSurgeryFuncs(), name) }

func inFold(list []string, name string) bool {
	for _, f := range list {
		if strings.EqualFold(f, name) {
			return true
		}
	}
	return false
}
