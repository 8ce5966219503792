package sqllock

import (
	"fmt"
	"strings"
)

// The statements a session runs, per dialect and table, built once by New.

// queries are the statements of one dialect and table.
type queries struct {
	grant          string
	renew          string // MySQL: the plain statement of earlier releases (plainRenew)
	renewCheck     string // MySQL only, with renew
	release        string // MySQL: the plain statement of earlier releases (plainRenew)
	releaseExpired string // MySQL only, with release
	remaining      string // microseconds left on the key's lease; no row when free
	abandon        string // delete the row of an abandoned grant request (key, session_id)

	// Schema version 2 (the waiter queue).
	grant2      string // the grant routine: queue or try, grant to the first live waiter
	renew2      string // MySQL: the renewal procedure, committed at the server (renew_mysql.go)
	release2    string // release (PostgreSQL: and wake the next waiter; MySQL: committed at the server)
	leave2      string // a waiter leaves the queue (MySQL: committed at the server)
	leave       string // MySQL: leave2's plain statement of earlier releases (plainRenew)
	abandon2    string // mark an abandoned request and delete its grant (MySQL: committed at the server)
	abandonMark string // MySQL: abandon2's plain statements of earlier releases: mark an abandoned request (then abandon deletes its grant)

	// The token floor.
	lastToken  string // the last token drawn (or the floor); PostgreSQL: and the lease table's max(token), and whether the server is a standby
	leaseTop   string // MySQL: the lease table's max(token), and whether the server is read-only or a replica
	raiseFloor string // raise the token source (PostgreSQL: under the advisory lock)
}

// pgDurableCommit, evaluated in a PostgreSQL statement, makes the commit of its
// transaction durable whatever the session's default (red-team rt31b F3): it sets
// synchronous_commit to on for that transaction alone (SET LOCAL). The commit reads the
// setting when it happens, so a grant (or a raise of the floor) is acknowledged only
// after its WAL — the lease row and the token sequence's advance — is flushed, and,
// with synchronous standbys configured, flushed by them: a database or role default of
// off (or local) cannot make a server crash (or a failover) forget tokens that were
// granted, after which the sequence would grant them again. Part of the grant
// statement itself: no extra round trip. The value is the literal on (a remote_apply
// default is lowered to on for the grant, which is as durable): a fenced pool's driver
// accepts a change of synchronous_commit only to a value it can read. (MySQL has no
// per-transaction equivalent: innodb_flush_log_at_trx_commit is global; see the
// package doc.)
const pgDurableCommit = `pg_catalog.set_config('synchronous_commit', 'on', true)`

func buildQueries(d Dialect, tn tableName) queries {
	if d == MySQL {
		t := tn.quoted(MySQL)
		return queries{
			grant: fmt.Sprintf("CALL %s(?, ?, ?, ?)", tn.with("_grant_v1").quoted(MySQL)),
			renew: fmt.Sprintf("UPDATE %s SET expires_at = "+myClock+" + INTERVAL ? MICROSECOND "+
				"WHERE lock_key = ? AND session_id = ? AND token = ? AND expires_at > "+myClock, t),
			renewCheck: fmt.Sprintf(myAsOfNow+"SELECT expires_at > "+myClock+" FROM %s "+
				"WHERE lock_key = ? AND session_id = ? AND token = ?", t),
			release: fmt.Sprintf("DELETE FROM %s "+
				"WHERE lock_key = ? AND session_id = ? AND token = ? AND expires_at > "+myClock, t),
			releaseExpired: fmt.Sprintf("DELETE FROM %s WHERE lock_key = ? AND session_id = ? AND token = ?", t),
			remaining: fmt.Sprintf(myAsOfNow+"SELECT TIMESTAMPDIFF(MICROSECOND, "+myClock+", expires_at) FROM %s "+
				"WHERE lock_key = ?", t),
			abandon:  fmt.Sprintf("DELETE FROM %s WHERE lock_key = ? AND session_id = ?", t),
			grant2:   fmt.Sprintf("CALL %s(?, ?, ?, ?, ?, ?)", tn.with("_grant_v2").quoted(MySQL)),
			renew2:   fmt.Sprintf("CALL %s(?, ?, ?, ?)", tn.with("_renew_v2").quoted(MySQL)),
			release2: fmt.Sprintf("CALL %s(?, ?, ?)", tn.with("_release_v2").quoted(MySQL)),
			leave2:   fmt.Sprintf("CALL %s(?)", tn.with("_leave_v2").quoted(MySQL)),
			abandon2: fmt.Sprintf("CALL %s(?, ?, ?, ?)", tn.with("_abandon_v2").quoted(MySQL)),
			leave:    fmt.Sprintf("DELETE FROM %s WHERE waiter_id = ? AND gone = 0", tn.waiters().quoted(MySQL)),
			abandonMark: fmt.Sprintf("INSERT INTO %s (lock_key, waiter_id, session_id, owner, alive_until, gone) "+
				"VALUES (?, ?, ?, '', "+myClock+" + INTERVAL ? MICROSECOND, 1) "+
				"ON DUPLICATE KEY UPDATE gone = 1, alive_until = "+myClock+" + INTERVAL ? MICROSECOND",
				tn.waiters().quoted(MySQL)),
			lastToken:  fmt.Sprintf(myAsOfNow+"SELECT v FROM %s WHERE id = 1 LOCK IN SHARE MODE", tn.with("_token").quoted(MySQL)),
			leaseTop:   fmt.Sprintf(myAsOfNow+"SELECT MAX(token), %s FROM %s", myReplicaExpr, t),
			raiseFloor: fmt.Sprintf("UPDATE %s SET v = ? WHERE id = 1 AND v < ?", tn.with("_token").quoted(MySQL)),
		}
	}
	t := tn.quoted(Postgres)
	seq := strings.ReplaceAll(tn.with("_token_seq").quoted(Postgres), "'", "''")
	return queries{
		// The advisory lock (held to the end of this one-statement transaction, one lock
		// for the whole table, whatever its name's spelling: tableClass) makes "draw the token, then insert or take over the row,
		// then commit" one critical section for all grants, so tokens follow the order in
		// which grants take effect, across keys too: a grant that waits for the key's row
		// lock (a concurrent renewal or release) does so before any later grant draws its
		// token. OFFSET 0 keeps the planner from flattening the subquery, so it runs
		// before the select list draws nextval.
		grant: fmt.Sprintf(`INSERT INTO %[1]s AS l (lock_key, owner, session_id, token, expires_at)
SELECT $1::text, $2::text, $3::text, pg_catalog.nextval('%[2]s'), pg_catalog.clock_timestamp() + $4::bigint * interval '1 microsecond'
  FROM (SELECT pg_catalog.pg_advisory_xact_lock(%[4]s, 1), %[5]s
          FROM (SELECT pg_catalog.pg_advisory_xact_lock(%[3]d, 1) OFFSET 0) AS earlier_releases OFFSET 0) AS serialise_grants
ON CONFLICT (lock_key) DO UPDATE
   SET owner = excluded.owner, session_id = excluded.session_id, token = excluded.token,
       expires_at = pg_catalog.clock_timestamp() + $4::bigint * interval '1 microsecond'
 WHERE l.expires_at <= pg_catalog.clock_timestamp()
RETURNING l.token`, t, seq, advisoryClass(tn), tableClass(pgLiteral(t)), pgDurableCommit),
		// Renewals and releases commit durably too (pgDurableCommit): a renewal
		// acknowledged before its WAL was flushed could be taken back by a crash or a
		// failover while its client trusts the lease (red-team rt41c, suspected with F3).
		renew: fmt.Sprintf(`UPDATE %s SET expires_at = pg_catalog.clock_timestamp() + $4::bigint * interval '1 microsecond'
  FROM (SELECT %s OFFSET 0) AS durable_commit
 WHERE lock_key = $1 AND session_id = $2 AND token = $3 AND expires_at > pg_catalog.clock_timestamp()`, t, pgDurableCommit),
		release: fmt.Sprintf(`WITH d AS (
  DELETE FROM %s WHERE lock_key = $1 AND session_id = $2 AND token = $3
  RETURNING lock_key, expires_at > pg_catalog.clock_timestamp() AS live
), n AS (
  SELECT pg_catalog.pg_notify($4::text, d.lock_key) FROM d
), durable_commit AS (
  SELECT %s
)
SELECT d.live, (SELECT pg_catalog.count(*) FROM n) FROM d, durable_commit`, t, pgDurableCommit),
		remaining: fmt.Sprintf(`SELECT (extract(epoch FROM expires_at - pg_catalog.clock_timestamp()) * 1000000)::bigint FROM %s WHERE lock_key = $1`, t),
		abandon: fmt.Sprintf(`WITH d AS (
  DELETE FROM %s WHERE lock_key = $1 AND session_id = $2 RETURNING lock_key
), n AS (
  SELECT pg_catalog.pg_notify($3::text, d.lock_key) FROM d
)
SELECT (SELECT pg_catalog.count(*) FROM d), (SELECT pg_catalog.count(*) FROM n)`, t),
		grant2: fmt.Sprintf(`SELECT o_token, o_ahead, o_holder_us, o_ahead_us, o_holder
  FROM (SELECT %s OFFSET 0) AS durable_commit,
       %s($1::text, $2::text, $3::text, $4::text, $5::bigint, $6::bigint <> 0, $7::text)`,
			pgDurableCommit, tn.with("_grant_v2").quoted(Postgres)),
		release2: fmt.Sprintf(`SELECT o_found, o_live FROM (SELECT %s OFFSET 0) AS durable_commit, %s($1::text, $2::text, $3::bigint)`,
			pgDurableCommit, tn.with("_release_v2").quoted(Postgres)),
		leave2:   fmt.Sprintf(`SELECT %s($1::text, $2::text)`, tn.with("_leave_v2").quoted(Postgres)),
		abandon2: fmt.Sprintf(`SELECT %s($1::text, $2::text, $3::text, $4::bigint)`, tn.with("_abandon_v2").quoted(Postgres)),
		lastToken: fmt.Sprintf(`SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END, (SELECT pg_catalog.max(token) FROM %s), pg_catalog.pg_is_in_recovery() FROM %s`,
			t, tn.with("_token_seq").quoted(Postgres)),
		raiseFloor: `SELECT pg_catalog.setval($1::text::regclass, $2::bigint, true)`,
	}
}
