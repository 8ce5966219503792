package sqllock

import (
	"context"
	"fmt"
	"time"
)

// MySQL/MariaDB renewals and releases, and the queue's clean-ups, run as stored
// procedures that commit by themselves (red-team rt41c F3).
//
// A plain UPDATE or DELETE sent by the client is committed only when its session is in
// autocommit and outside a transaction. A pool whose DSN says autocommit=0, or a pooled
// connection that the application left inside a START TRANSACTION (database/sql does
// not know of it), ran the renewal inside a transaction that nobody committed: the
// server answered "1 row changed", the client extended its lease, and the server rolled
// the renewal back when the connection went — while its client still trusted the lease
// (G7). Running START TRANSACTION, the statement and COMMIT from the client fixed that
// but held the key's row lock between the UPDATE and the COMMIT, across a network round
// trip: a client paused there (SIGSTOP, GC) kept the key's grants waiting
// (locktest PausedHolderLostBeforeRegrant), so it was reverted.
//
// <table>_renew_v2 and <table>_release_v2 do the whole transaction at the server, in the
// one round trip of their CALL: START TRANSACTION READ WRITE, the row's update or delete,
// COMMIT AND NO CHAIN NO RELEASE, and only then the one-row result the client reads. The
// server never waits for the client while it holds the row lock, so a client paused at
// any point holds no lock of the lease table; and the result is sent after the COMMIT,
// so a renewal the client is told about is committed, whatever the session's autocommit
// or completion_type. START TRANSACTION first ends a transaction the application left
// open on the connection by committing it (an implicit commit, as every call of a grant
// procedure has always done): do not share the lease table's pool with transactions of
// your own. A session whose next transaction was made READ ONLY is overridden (READ
// WRITE); a read-only server, or an XA transaction open on the connection, makes the
// call fail (the lease is then lost at its local deadline, fail-closed). The procedures
// carry their revision in their COMMENT, as the grant procedures do (upgrade_mysql.go);
// revision 2 refuses a replica or read-only server before anything is written
// (myPrimaryCheck, red-team rt48d F2: a renewal there kept alive a copy of a lease the
// primary never saw). Revision 3 of the renewal and the release reads the lease table
// as it is now whatever the session's system_versioning_asof (myAsOfNow, red-team rt50b
// F1: a release read an old version of the row); the queue's clean-ups select nothing
// from a table and stay at revision 2.

// myRenewComment and myReleaseComment are the COMMENTs of the current revisions of
// <table>_renew_v2 and <table>_release_v2, myLeaveComment and myAbandonComment of
// <table>_leave_v2 and <table>_abandon_v2.
const (
	myRenewComment   = "fencedsql sqllock: renew p_key for p_session and p_token, committed at the server; returns 1 if renewed; rev 3"
	myReleaseComment = "fencedsql sqllock: release p_key for p_session and p_token, committed at the server; returns found, live; rev 3"
	myLeaveComment   = "fencedsql sqllock: waiter p_waiter leaves the queue, committed at the server; returns the rows deleted; rev 2"
	myAbandonComment = "fencedsql sqllock: mark request p_waiter abandoned, then delete its grant, committed at the server; rev 2"
)

// myDDLRenew returns the CREATE PROCEDURE statements of <table>_renew_v2,
// <table>_release_v2, <table>_leave_v2 and <table>_abandon_v2.
//
// The renewal's UPDATE matches the key's row only if the session and token are the
// grant's and the lease has not expired by the server's clock (myClock); MySQL counts
// changed rows, so a renewal that computes the expires_at already stored (it changed
// nothing) is counted by a second read of the row, in the same transaction. It returns
// one row, renewed: 1 if the lease is live and extended, 0 if it was lost (no such row,
// or expired). A NULL clock (myClock) matches no row: the lease is lost.
//
// The release deletes the key's row if the session and token are the grant's, after
// reading (under its row lock) whether it still existed and was live: one row (found,
// live), as PostgreSQL's <table>_release_v2 returns.
//
// The queue's clean-ups commit at the server the same way: <table>_leave_v2 deletes a
// waiter's row (one row, n: the rows deleted); <table>_abandon_v2 marks an abandoned
// request gone in the waiter table, then deletes the grant it may have got (one row,
// n: the grants deleted).
func myDDLRenew(tn tableName) []string {
	t := tn.quoted(MySQL)
	w := tn.waiters().quoted(MySQL)
	handler := "    DECLARE EXIT HANDLER FOR SQLEXCEPTION\n" +
		"    BEGIN\n" +
		"        ROLLBACK AND NO CHAIN NO RELEASE;\n" +
		"        RESIGNAL;\n" +
		"    END;\n"
	return []string{
		fmt.Sprintf("CREATE PROCEDURE %s(\n"+
			"    IN p_key VARBINARY(%d), IN p_session VARCHAR(64) CHARACTER SET ascii,\n"+
			"    IN p_token BIGINT, IN p_ttl_us BIGINT)\n"+
			"    MODIFIES SQL DATA SQL SECURITY INVOKER\n"+
			"    COMMENT '"+myRenewComment+"'\n"+
			"BEGIN\n"+
			"    DECLARE v_n BIGINT DEFAULT 0;\n"+
			handler+
			myPrimaryCheck+
			"    START TRANSACTION READ WRITE;\n"+
			"    UPDATE %s SET expires_at = "+myClock+" + INTERVAL p_ttl_us MICROSECOND\n"+
			"        WHERE lock_key = p_key AND session_id = p_session AND token = p_token AND expires_at > "+myClock+";\n"+
			"    SET v_n = ROW_COUNT();\n"+
			"    IF v_n = 0 THEN\n"+
			"        "+myAsOfNow+"SELECT COUNT(*) INTO v_n FROM %s\n"+
			"            WHERE lock_key = p_key AND session_id = p_session AND token = p_token AND expires_at > "+myClock+";\n"+
			"    END IF;\n"+
			"    COMMIT AND NO CHAIN NO RELEASE;\n"+
			"    SELECT IF(v_n > 0, 1, 0) AS renewed;\n"+
			"END", tn.with("_renew_v2").quoted(MySQL), MaxKeyLen, t, t),
		fmt.Sprintf("CREATE PROCEDURE %s(\n"+
			"    IN p_key VARBINARY(%d), IN p_session VARCHAR(64) CHARACTER SET ascii, IN p_token BIGINT)\n"+
			"    MODIFIES SQL DATA SQL SECURITY INVOKER\n"+
			"    COMMENT '"+myReleaseComment+"'\n"+
			"BEGIN\n"+
			"    DECLARE v_found BIGINT DEFAULT 0;\n"+
			"    DECLARE v_live BIGINT DEFAULT 0;\n"+
			handler+
			myPrimaryCheck+
			"    START TRANSACTION READ WRITE;\n"+
			"    "+myAsOfNow+"SELECT COUNT(*), COALESCE(MAX(expires_at > "+myClock+"), 0) INTO v_found, v_live FROM %s\n"+
			"        WHERE lock_key = p_key AND session_id = p_session AND token = p_token FOR UPDATE;\n"+
			"    IF v_found > 0 THEN\n"+
			"        DELETE FROM %s WHERE lock_key = p_key AND session_id = p_session AND token = p_token;\n"+
			"    END IF;\n"+
			"    COMMIT AND NO CHAIN NO RELEASE;\n"+
			"    SELECT IF(v_found > 0, 1, 0) AS found, IF(v_live > 0, 1, 0) AS live;\n"+
			"END", tn.with("_release_v2").quoted(MySQL), MaxKeyLen, t, t),
		fmt.Sprintf("CREATE PROCEDURE %s(IN p_waiter VARCHAR(64) CHARACTER SET ascii)\n"+
			"    MODIFIES SQL DATA SQL SECURITY INVOKER\n"+
			"    COMMENT '"+myLeaveComment+"'\n"+
			"BEGIN\n"+
			"    DECLARE v_n BIGINT DEFAULT 0;\n"+
			handler+
			myPrimaryCheck+
			"    START TRANSACTION READ WRITE;\n"+
			"    DELETE FROM %s WHERE waiter_id = p_waiter AND gone = 0;\n"+
			"    SET v_n = ROW_COUNT();\n"+
			"    COMMIT AND NO CHAIN NO RELEASE;\n"+
			"    SELECT v_n AS n;\n"+
			"END", tn.with("_leave_v2").quoted(MySQL), w),
		// Two transactions, in this order: the mark is committed before the grant is
		// deleted, so that no grant of the request slips in between (a grant locks the
		// request's waiter row), and neither holds the waiter row and the key's row at
		// once (a grant locks the key's row first: no lock-order cycle).
		fmt.Sprintf("CREATE PROCEDURE %s(\n"+
			"    IN p_key VARBINARY(%d), IN p_waiter VARCHAR(64) CHARACTER SET ascii,\n"+
			"    IN p_session VARCHAR(64) CHARACTER SET ascii, IN p_keep_us BIGINT)\n"+
			"    MODIFIES SQL DATA SQL SECURITY INVOKER\n"+
			"    COMMENT '"+myAbandonComment+"'\n"+
			"BEGIN\n"+
			"    DECLARE v_n BIGINT DEFAULT 0;\n"+
			handler+
			myPrimaryCheck+
			"    START TRANSACTION READ WRITE;\n"+
			"    INSERT INTO %s (lock_key, waiter_id, session_id, owner, alive_until, gone)\n"+
			"        VALUES (p_key, p_waiter, p_session, '', "+myClock+" + INTERVAL p_keep_us MICROSECOND, 1)\n"+
			"        ON DUPLICATE KEY UPDATE gone = 1, alive_until = "+myClock+" + INTERVAL p_keep_us MICROSECOND;\n"+
			"    COMMIT AND NO CHAIN NO RELEASE;\n"+
			"    START TRANSACTION READ WRITE;\n"+
			"    DELETE FROM %s WHERE lock_key = p_key AND session_id = p_waiter;\n"+
			"    SET v_n = ROW_COUNT();\n"+
			"    COMMIT AND NO CHAIN NO RELEASE;\n"+
			"    SELECT v_n AS n;\n"+
			"END", tn.with("_abandon_v2").quoted(MySQL), MaxKeyLen, w, t),
	}
}

// plainRenew reports whether the MySQL backend currently renews, releases, leaves the
// queue and cleans up abandoned requests with the plain statements of earlier
// releases: the table has no schema version 2 (legacy), or one of the procedures of
// myDDLRenew was missing a moment ago (missingRenewProcs).
func (b *Backend) plainRenew() bool {
	if b.legacy() {
		return true
	}
	u := b.plainRenewUntil.Load()
	return u != 0 && time.Now().UnixNano() < u
}

// missingRenewProcs decides what a failed CALL of a procedure of myDDLRenew means when
// err says that a table or routine does not exist (nothing ran). It returns
// (false, nil) for any other error. If the lease table itself does not
// exist, the error is a *SchemaError (CreateTable never ran). If it does, the table was
// created by an earlier release and not upgraded: the backend renews, releases and
// cleans up the queue with the plain statements of that release for legacyRecheck (as it did before: committed
// only on a session in autocommit outside a transaction; the procedures come together
// with CreateTable, so one missing means the others are too), warns once through
// WithLogger's logger, and missingRenewProcs returns (true, nil); CheckTable reports
// the table as Outdated, and CreateTable adds the procedures. Failing the renewal
// instead would lose every lease of a deployment that upgraded its binaries before
// running CreateTable. When the database cannot answer, the error wraps
// lockclient.ErrUnavailable.
func (b *Backend) missingRenewProcs(ctx context.Context, op, key string, err error) (plain bool, _ error) {
	if fallBack, ferr := b.fallBackFor(ctx, op, key, err, &b.plainRenewUntil); !fallBack {
		return false, ferr
	}
	if !b.legacy() { // a table without version 2 was warned about already
		b.plainRenewWarn.Do(func() {
			b.logger.Warn("sqllock: the procedures that commit renewals, releases and queue clean-ups are missing (the lease table was created "+
				"by an earlier release); run sqllock.CreateTable to upgrade it. Until then they are plain statements, committed only on a pool "+
				"in autocommit without a transaction left open",
				"table", b.table.String(), "err", err)
		})
	}
	return true, nil
}
