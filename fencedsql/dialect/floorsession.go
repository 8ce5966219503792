package dialect

// ReplicatedRaiser is implemented by dialects in which the raising session's own
// settings can keep a token floor's raise from the replicas (red-team rt42f F3):
// PostgreSQL's synchronous_commit (a role, database or DSN default of local or off
// commits the raise before the synchronous standby has it, and a failover to that
// standby forgets it), MySQL/MariaDB's sql_log_bin = 0, skip_replication, a borrowed
// server_id or gtid_domain_id, a preset gtid_seq_no, wsrep_on off (the raise never
// reaches the binary log or is filtered out by the replicas).
//
// RaiseSessionQuery runs first in the raise's transaction, on its connection, and yields
// one row with one text value: empty when the raise, committed in that transaction, is
// replicated as the server's replication is configured — having set what it can for
// the transaction alone (PostgreSQL: synchronous_commit = on, SET LOCAL) — or else
// the session settings that keep it out, named for the error; the raise then writes
// nothing.
type ReplicatedRaiser interface {
	RaiseSessionQuery() string
}
