package sqllock

import (
	"fmt"
	"strings"

	"github.com/fencedsql/fencedsql/lockclient"
)

// The server-role check: the lease table is written on the primary only. A replica's
// lease table and token source lag the primary's, and what is written there never
// reaches the primary: a grant on a MariaDB replica (not read_only, MariaDB's default;
// or read_only with an account that has READ_ONLY ADMIN or SUPER) drew its token from
// the replica's counter and wrote the replica's lease row, and the primary then granted
// the same lock with the same token to another holder (red-team rt48d F2); LastToken
// read there answers below tokens the primary granted (rt31b).
//
// PostgreSQL needs no check of its own in the writes: a hot standby refuses every write
// (SQLSTATE 25006, read-only transaction), as does a primary whose transaction is read
// only; LastToken and Retire read pg_is_in_recovery() in their statement, and RaiseFloor
// refuses before its setval. MySQL/MariaDB is checked by the expressions below: one
// definition, used by LastToken's statement (leaseTop), Retire, RaiseFloor and, as
// myPrimaryCheck, the first statements of every procedure that writes the lease
// table, its counter or its waiters.

// myReadOnlyExpr is true when the server is read-only. The value is read as text, so
// that an enumerated read_only (ON, NO_LOCK, …) counts too. It costs nothing.
const myReadOnlyExpr = "CAST(@@global.read_only AS CHAR) NOT IN ('0', 'OFF')"

// myReplicatingExpr is true when replication runs on the server: its threads in the
// process list (Slave_IO, Slave_SQL, Slave_worker), which an account sees only with the
// PROCESS privilege, or, on MariaDB, the status variable Slaves_running (replication
// connections whose SQL thread runs), which every account may read — a missing status
// row counts as a replica (fail closed). The same test as the fenced pool's
// (dialects/mysql writablePrimary), written again here: lockclient imports nothing of
// fencedsql. Both are materialised information_schema tables: 1–5 ms per read on a
// loaded server, several times a whole grant, so the procedures read them at most once
// per second per connection (myPrimaryCheck).
const myReplicatingExpr = "(EXISTS (SELECT 1 FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Slave_SQL', 'Slave_IO', 'Slave_worker'))" +
	" /*M!100002 OR COALESCE((SELECT s.VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS s WHERE s.VARIABLE_NAME = 'SLAVES_RUNNING') <> 0, TRUE) */)"

// myReplicaExpr is the whole check: true on a server that is read-only or a replica.
const myReplicaExpr = "(" + myReadOnlyExpr + " OR " + myReplicatingExpr + ")"

// notPrimarySignal is the message of myPrimaryCheck's SIGNAL.
const notPrimarySignal = "fencedsql sqllock: the server is a replica or read-only"

// myPrimaryVar is the session variable in which myPrimaryCheck remembers, per
// connection, until when (UNIX_TIMESTAMP of the server's SYSDATE) the last reading of
// myReplicatingExpr holds.
const myPrimaryVar = "@fencedsql_sqllock_primary_until"

// myPrimaryCheck is the first statement of every MySQL procedure that writes (after
// myNoClock in the grant procedures): before anything is written, it SIGNALs
// notPrimarySignal (error 1644; replicaError) on a read-only server — at every call,
// whatever the account's privileges (READ_ONLY ADMIN and SUPER write on a read-only
// server all the same) — and on a server whose replication threads run, read again
// when the connection's last reading is more than a second old (myPrimaryVar: a clock
// that went back reads again too). It rides in the procedure's CALL: no extra round
// trip. A connection that saw no replication threads may grant for up to a second
// after they start on a server that is not read-only: a replica is made read_only, or
// a reconfigured primary is, before replication starts (the README's advice).
const myPrimaryCheck = "    IF " + myReadOnlyExpr + " THEN\n" +
	"        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '" + notPrimarySignal + "';\n" +
	"    END IF;\n" +
	"    IF " + myPrimaryVar + " IS NULL OR " + myPrimaryVar + " < UNIX_TIMESTAMP(SYSDATE(6))\n" +
	"       OR " + myPrimaryVar + " > UNIX_TIMESTAMP(SYSDATE(6)) + 1 THEN\n" +
	"        SET " + myPrimaryVar + " = NULL;\n" +
	"        IF " + myReplicatingExpr + " THEN\n" +
	"            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '" + notPrimarySignal + "';\n" +
	"        END IF;\n" +
	"        SET " + myPrimaryVar + " = UNIX_TIMESTAMP(SYSDATE(6)) + 1;\n" +
	"    END IF;\n"

// refusedAsReplica reports whether err is the refusal of a server that is not the
// primary: myPrimaryCheck's SIGNAL (MySQL), or PostgreSQL's read-only transaction
// (25006: a hot standby, or a session or database made read only). Either refusal
// comes before anything was written (the check is the procedure's first statement; a
// failed PostgreSQL statement is rolled back whole), so a grant refused so needs no
// abandonment.
func refusedAsReplica(err error) bool {
	return isMySQLErr(err, 1644) && strings.Contains(err.Error(), notPrimarySignal) || pgStateIn(err, "25006")
}

// replicaError is the error of an operation refused because the server is a standby,
// a replica or read-only (cause: the database's refusal, or nil when the backend's own
// reading of the role found it): it wraps lockclient.ErrUnavailable, as a failover may
// yet make the server the primary.
func replicaError(op string, cause error) error {
	err := fmt.Errorf("sqllock: %s: %w: the server is a standby, a replica or read-only: its lease table and token source lag the "+
		"primary's, which may have granted higher tokens, and nothing written there reaches the primary; use the primary",
		op, lockclient.ErrUnavailable)
	if cause != nil {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	return err
}
