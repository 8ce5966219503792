package sqllock

import (
	"fmt"
)

// MySQL/MariaDB's lease table, token table and stored procedures: schema version 1
// (myDDL) and the waiter queue of version 2 (myDDLv2).

// myGrantV1Comment is the COMMENT of the version-1 grant procedure <table>_grant_v1
// (a backend falls back on it while version 2 is missing); "rev 2": expiry by the
// server's clock (myClock, red-team rt41c F1); "rev 3": the server-role check
// (myPrimaryCheck, red-team rt48d F2); "rev 4": its SELECTs read the present whatever
// the session's system_versioning_asof (myAsOfNow, red-team rt50b F1). The first
// revision had no "rev".
const myGrantV1Comment = "fencedsql sqllock: grant p_key if free or expired; returns the token, 0 if held; rev 4"

func myDDL(tn tableName) []string {
	t := tn.quoted(MySQL)
	c := tn.with("_token").quoted(MySQL)
	p := tn.with("_grant_v1").quoted(MySQL)
	return []string{
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n"+
			"    lock_key   VARBINARY(%d) NOT NULL PRIMARY KEY,\n"+
			"    owner      VARCHAR(255) CHARACTER SET utf8mb4 NOT NULL,\n"+
			"    session_id VARCHAR(64) CHARACTER SET ascii NOT NULL,\n"+
			"    token      BIGINT NOT NULL,\n"+
			"    expires_at DATETIME(6) NOT NULL COMMENT 'UTC, server clock'\n"+
			") ENGINE=InnoDB", t, MaxKeyLen),
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n"+
			"    id TINYINT NOT NULL PRIMARY KEY,\n"+
			"    v  BIGINT  NOT NULL COMMENT 'last fencing token issued'\n"+
			") ENGINE=InnoDB", c),
		// The counter row starts at the highest token of the lease table: 0 for a new
		// table, above its holders' tokens when the row was lost.
		fmt.Sprintf("INSERT IGNORE INTO %s (id, v) SELECT 1, COALESCE(MAX(token), 0) FROM %s", c, t),
		// One round trip, one short transaction at the server. The counter row lock
		// serialises grants, so tokens follow commit order; renew and release never
		// take it, and grants take it first, so there is no lock-order cycle.
		fmt.Sprintf("CREATE PROCEDURE %s(\n"+
			"    IN p_key VARBINARY(%d), IN p_owner VARCHAR(255) CHARACTER SET utf8mb4,\n"+
			"    IN p_session VARCHAR(64) CHARACTER SET ascii, IN p_ttl_us BIGINT)\n"+
			"    MODIFIES SQL DATA SQL SECURITY INVOKER\n"+
			"    COMMENT '"+myGrantV1Comment+"'\n"+
			"BEGIN\n"+
			"    DECLARE v_token BIGINT DEFAULT NULL;\n"+
			"    DECLARE v_live INT DEFAULT 0;\n"+
			"    DECLARE EXIT HANDLER FOR SQLEXCEPTION\n"+
			"    BEGIN\n"+
			"        ROLLBACK;\n"+
			"        RESIGNAL;\n"+
			"    END;\n"+
			myNoClock+
			myPrimaryCheck+
			"    START TRANSACTION;\n"+
			"    "+myAsOfNow+"SELECT v INTO v_token FROM %s WHERE id = 1 FOR UPDATE;\n"+
			"    IF v_token IS NULL THEN\n"+
			"        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'fencedsql sqllock: the token counter row is missing';\n"+
			"    END IF;\n"+
			"    "+myAsOfNow+"SELECT COUNT(*) INTO v_live FROM %s\n"+
			"        WHERE lock_key = p_key AND expires_at > "+myClock+" FOR UPDATE;\n"+
			"    IF v_live > 0 THEN\n"+
			"        COMMIT;\n"+
			"        SELECT CAST(0 AS SIGNED) AS token;\n"+
			"    ELSE\n"+
			"        SET v_token = v_token + 1;\n"+
			"        UPDATE %s SET v = v_token WHERE id = 1;\n"+
			"        INSERT INTO %s (lock_key, owner, session_id, token, expires_at)\n"+
			"            VALUES (p_key, p_owner, p_session, v_token, "+myClock+" + INTERVAL p_ttl_us MICROSECOND)\n"+
			"            ON DUPLICATE KEY UPDATE owner = p_owner, session_id = p_session, token = v_token,\n"+
			"                expires_at = "+myClock+" + INTERVAL p_ttl_us MICROSECOND;\n"+
			"        COMMIT;\n"+
			"        SELECT v_token AS token;\n"+
			"    END IF;\n"+
			"END", p, MaxKeyLen, c, t, c, t),
	}
}

// myDDLv2: the waiter queue on MySQL/MariaDB, and the grant procedure that respects it.
//
// The procedure first joins or refreshes the queue and reads where the queue and the key
// stand, each an autocommit statement without the counter lock (most calls are waiters
// that are not first, and stop there). Only a caller that may be granted starts the
// grant transaction. It first locks the key's row, waiting there for a renewal, release
// or operator's query that holds it, before it takes the counter row: a grant never
// waits for a row lock of the lease table while it holds the counter, so a row lock on
// one key delays only that key's grants. The key's row must exist for that (a locking
// read of a missing row would take a gap lock, which two grants of new keys would
// deadlock on): a key without a row first gets an expired placeholder (token 0, expired
// in 1970, which every reader takes for free), committed on its own; a row deleted in
// between is looked for again, up to three times. Then, as in version 1: lock the
// counter row, lock the request's waiter row
// (or its gap: an abandon mark inserted concurrently waits for this transaction, and is
// then followed by the delete of this grant), lock and test the key's row, re-check the
// queue, grant. A waiter's liveness (alive_until) is written only when a third of its
// TTL has passed, so that polls are reads. After a grant it deletes up to 8 lapsed
// waiter rows and abandon marks (READ COMMITTED, errors ignored). Every path ends with
// a COMMIT, before the result and after the clean-up: on a session with autocommit=0
// the statements before the grant transaction (the queue's join or refresh) and the
// clean-up would otherwise stay uncommitted, their rows locked, on an idle pooled
// connection (red-team rt41c F3's class); with autocommit on it commits nothing. Every
// COMMIT and ROLLBACK says AND NO CHAIN NO RELEASE: a session's completion_type of
// RELEASE made the first COMMIT cut the connection in the middle of the grant, and
// CHAIN left a transaction open after it.
//
// myGrantComment is the COMMENT of the grant procedure <table>_grant_v2; its revision
// tells CreateTable and CheckTable whether an existing procedure is the current one
// (CREATE PROCEDURE does not replace). Revisions: 2, the key's row is locked before the
// counter; 3, expiry is judged by the server's clock (myClock), not the session's
// (red-team rt41c F1); 4, every path commits, whatever the session's autocommit
// (red-team rt41c F3); 5, a replica or read-only server is refused before anything is
// written (myPrimaryCheck, red-team rt48d F2); 6, its SELECTs read the present whatever
// the session's system_versioning_asof (myAsOfNow, red-team rt50b F1).
const myGrantComment = "fencedsql sqllock: queue for (p_queue) or try p_key; grant it to the first live waiter; rev 6"

func myDDLv2(tn tableName) []string {
	t := tn.quoted(MySQL)
	c := tn.with("_token").quoted(MySQL)
	w := tn.waiters().quoted(MySQL)
	p := tn.with("_grant_v2").quoted(MySQL)
	return []string{
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n"+
			"    ticket      BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,\n"+
			"    lock_key    VARBINARY(%d) NOT NULL,\n"+
			"    waiter_id   VARCHAR(64) CHARACTER SET ascii NOT NULL,\n"+
			"    session_id  VARCHAR(64) CHARACTER SET ascii NOT NULL,\n"+
			"    owner       VARCHAR(255) CHARACTER SET utf8mb4 NOT NULL,\n"+
			"    alive_until DATETIME(6) NOT NULL COMMENT 'UTC, server clock',\n"+
			"    gone        TINYINT NOT NULL DEFAULT 0 COMMENT '1: abandoned request, kept until alive_until',\n"+
			"    UNIQUE KEY waiter_id (waiter_id),\n"+
			"    KEY queue (lock_key, ticket),\n"+
			"    KEY alive (alive_until)\n"+
			") ENGINE=InnoDB", w, MaxKeyLen),
		fmt.Sprintf("CREATE PROCEDURE %[1]s(\n"+
			"    IN p_key VARBINARY(%[2]d), IN p_owner VARCHAR(255) CHARACTER SET utf8mb4,\n"+
			"    IN p_session VARCHAR(64) CHARACTER SET ascii, IN p_waiter VARCHAR(64) CHARACTER SET ascii,\n"+
			"    IN p_ttl_us BIGINT, IN p_queue TINYINT)\n"+
			"    MODIFIES SQL DATA SQL SECURITY INVOKER\n"+
			"    COMMENT '"+myGrantComment+"'\n"+
			"proc: BEGIN\n"+
			"    DECLARE v_count BIGINT DEFAULT NULL;\n"+
			"    DECLARE v_token BIGINT DEFAULT 0;\n"+
			"    DECLARE v_ticket BIGINT DEFAULT NULL;\n"+
			"    DECLARE v_gone INT DEFAULT 0;\n"+
			"    DECLARE v_stale INT DEFAULT 0;\n"+
			"    DECLARE v_n BIGINT DEFAULT 0;\n"+
			"    DECLARE v_ahead BIGINT DEFAULT 0;\n"+
			"    DECLARE v_ahead_us BIGINT DEFAULT 0;\n"+
			"    DECLARE v_holder_us BIGINT DEFAULT 0;\n"+
			"    DECLARE v_holder BIGINT DEFAULT 0;\n"+
			"    DECLARE v_try INT DEFAULT 0;\n"+
			"    DECLARE EXIT HANDLER FOR SQLEXCEPTION\n"+
			"    BEGIN\n"+
			"        ROLLBACK AND NO CHAIN NO RELEASE;\n"+
			"        RESIGNAL;\n"+
			"    END;\n"+
			myNoClock+
			myPrimaryCheck+
			"    body: BEGIN\n"+
			"        "+myAsOfNow+"SELECT MAX(ticket), COALESCE(MAX(gone), 0),\n"+
			"               COALESCE(MAX(alive_until < "+myClock+" + INTERVAL (p_ttl_us * 2 DIV 3) MICROSECOND), 0)\n"+
			"          INTO v_ticket, v_gone, v_stale FROM %[3]s WHERE waiter_id = p_waiter;\n"+
			"        IF v_gone THEN\n"+
			"            SET v_token = -1;\n"+
			"            LEAVE body;\n"+
			"        END IF;\n"+
			"        IF p_queue THEN\n"+
			"            IF v_ticket IS NULL THEN\n"+
			"                INSERT INTO %[3]s (lock_key, waiter_id, session_id, owner, alive_until)\n"+
			"                    VALUES (p_key, p_waiter, p_session, p_owner, "+myClock+" + INTERVAL p_ttl_us MICROSECOND);\n"+
			"                "+myAsOfNow+"SELECT MAX(ticket) INTO v_ticket FROM %[3]s WHERE waiter_id = p_waiter;\n"+
			"            ELSEIF v_stale THEN\n"+
			"                UPDATE %[3]s SET alive_until = "+myClock+" + INTERVAL p_ttl_us MICROSECOND\n"+
			"                    WHERE waiter_id = p_waiter AND gone = 0;\n"+
			"            END IF;\n"+
			"        END IF;\n"+
			"        "+myAsOfNow+"SELECT COUNT(*), COALESCE(MAX(TIMESTAMPDIFF(MICROSECOND, "+myClock+", alive_until)), 0)\n"+
			"          INTO v_ahead, v_ahead_us FROM %[3]s\n"+
			"         WHERE lock_key = p_key AND gone = 0 AND alive_until > "+myClock+"\n"+
			"           AND (v_ticket IS NULL OR ticket < v_ticket);\n"+
			"        "+myAsOfNow+"SELECT COALESCE(MAX(TIMESTAMPDIFF(MICROSECOND, "+myClock+", expires_at)), 0), COALESCE(MAX(token), 0)\n"+
			"          INTO v_holder_us, v_holder FROM %[4]s WHERE lock_key = p_key AND expires_at > "+myClock+";\n"+
			"        IF v_ahead > 0 OR v_holder_us > 0 THEN\n"+
			"            LEAVE body;\n"+
			"        END IF;\n"+
			"        pre: LOOP\n"+
			"            IF NOT EXISTS (SELECT 1 FROM %[4]s WHERE lock_key = p_key) THEN\n"+
			"                INSERT IGNORE INTO %[4]s (lock_key, owner, session_id, token, expires_at)\n"+
			"                    VALUES (p_key, '', '', 0, TIMESTAMP '1970-01-01 00:00:00');\n"+
			"            END IF;\n"+
			"            START TRANSACTION;\n"+
			"            "+myAsOfNow+"SELECT COUNT(*) INTO v_n FROM %[4]s WHERE lock_key = p_key FOR UPDATE;\n"+
			"            SET v_try = v_try + 1;\n"+
			"            IF v_n > 0 OR v_try >= 3 THEN\n"+
			"                LEAVE pre;\n"+
			"            END IF;\n"+
			"            COMMIT AND NO CHAIN NO RELEASE;\n"+
			"        END LOOP pre;\n"+
			"        "+myAsOfNow+"SELECT v INTO v_count FROM %[5]s WHERE id = 1 FOR UPDATE;\n"+
			"        IF v_count IS NULL THEN\n"+
			"            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'fencedsql sqllock: the token counter row is missing';\n"+
			"        END IF;\n"+
			"        "+myAsOfNow+"SELECT COUNT(*), COALESCE(MAX(gone), 0) INTO v_n, v_gone FROM %[3]s WHERE waiter_id = p_waiter FOR UPDATE;\n"+
			"        IF v_gone OR (p_queue AND v_n = 0) THEN\n"+
			"            COMMIT AND NO CHAIN NO RELEASE;\n"+
			"            SET v_token = -1;\n"+
			"            LEAVE body;\n"+
			"        END IF;\n"+
			"        "+myAsOfNow+"SELECT COUNT(*) INTO v_n FROM %[4]s\n"+
			"            WHERE lock_key = p_key AND expires_at > "+myClock+" FOR UPDATE;\n"+
			"        "+myAsOfNow+"SELECT COUNT(*) INTO v_ahead FROM %[3]s\n"+
			"         WHERE lock_key = p_key AND gone = 0 AND alive_until > "+myClock+"\n"+
			"           AND (v_ticket IS NULL OR ticket < v_ticket);\n"+
			"        IF v_n > 0 OR v_ahead > 0 THEN\n"+
			"            COMMIT AND NO CHAIN NO RELEASE;\n"+
			"            SET v_holder_us = IF(v_n > 0, 1, 0);\n"+
			"            LEAVE body;\n"+
			"        END IF;\n"+
			"        SET v_token = v_count + 1;\n"+
			"        UPDATE %[5]s SET v = v_token WHERE id = 1;\n"+
			"        INSERT INTO %[4]s (lock_key, owner, session_id, token, expires_at)\n"+
			"            VALUES (p_key, p_owner, p_waiter, v_token, "+myClock+" + INTERVAL p_ttl_us MICROSECOND)\n"+
			"            ON DUPLICATE KEY UPDATE owner = p_owner, session_id = p_waiter, token = v_token,\n"+
			"                expires_at = "+myClock+" + INTERVAL p_ttl_us MICROSECOND;\n"+
			"        IF p_queue THEN\n"+
			"            DELETE FROM %[3]s WHERE waiter_id = p_waiter;\n"+
			"        END IF;\n"+
			"        COMMIT AND NO CHAIN NO RELEASE;\n"+
			"        SET v_holder = v_token, v_holder_us = p_ttl_us, v_ahead = 0, v_ahead_us = 0;\n"+
			"    END body;\n"+
			"    COMMIT AND NO CHAIN NO RELEASE;\n"+
			"    SELECT v_token AS token, v_ahead AS ahead, v_holder_us AS holder_us, v_ahead_us AS ahead_us, v_holder AS holder;\n"+
			"    IF v_token > 0 THEN\n"+
			"        gc: BEGIN\n"+
			"            DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END;\n"+
			"            SET TRANSACTION ISOLATION LEVEL READ COMMITTED;\n"+
			"            DELETE FROM %[3]s WHERE alive_until < "+myClock+" ORDER BY alive_until LIMIT 8;\n"+
			"            COMMIT AND NO CHAIN NO RELEASE;\n"+
			"        END gc;\n"+
			"    END IF;\n"+
			"END proc", p, MaxKeyLen, w, t, c),
	}
}
